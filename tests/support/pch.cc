// The translation unit that builds the shared precompiled test headers (tools/cmake/hark.cmake).
