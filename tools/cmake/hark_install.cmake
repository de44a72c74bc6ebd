# The installed package: `cmake --install build/release --prefix P` puts the libraries of
# hark::core (with base, io and storage), hark::protocol and hark::client in P/lib, their
# headers in P/include/hark/..., hark-config.cmake with its version file in P/lib/cmake/hark
# (find_package(hark CONFIG)) and hark.pc in P/lib/pkgconfig. docs/embedding.md shows both,
# and docs/examples/embedded-broker is a program built against them (tools/test.sh builds it).
include(CMakePackageConfigHelpers)

set(HARK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hark)

# One library: exported as hark::<name>; the headers of the folder declaring it, under
# include/hark/<folder> (a folder's sub-libraries, such as core/base, install their own).
function(hark_install_library name)
  set_target_properties(hark_${name} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS hark_${name} EXPORT hark-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  file(RELATIVE_PATH folder ${HARK_ROOT} ${CMAKE_CURRENT_SOURCE_DIR})
  file(GLOB_RECURSE headers RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${CMAKE_CURRENT_SOURCE_DIR}/*.inc)
  foreach(header IN LISTS headers)
    get_filename_component(subfolder ${header} DIRECTORY)
    install(FILES ${header}
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hark/${folder}/${subfolder})
  endforeach()
endfunction()

# Called once from the root CMakeLists.txt, after every library is declared.
function(hark_install_package)
  install(EXPORT hark-targets NAMESPACE hark:: DESTINATION ${HARK_CMAKE_DIR})
  configure_package_config_file(${HARK_ROOT}/tools/cmake/hark-config.cmake.in
    ${CMAKE_BINARY_DIR}/hark-config.cmake INSTALL_DESTINATION ${HARK_CMAKE_DIR})
  # Before 1.0 a minor version may break the API: only the same minor version is compatible.
  write_basic_package_version_file(${CMAKE_BINARY_DIR}/hark-config-version.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/hark-config.cmake ${CMAKE_BINARY_DIR}/hark-config-version.cmake
          DESTINATION ${HARK_CMAKE_DIR})
  foreach(pc hark hark-client)
    configure_file(${HARK_ROOT}/tools/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
    install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endforeach()
endfunction()
