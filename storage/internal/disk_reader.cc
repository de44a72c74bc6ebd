#include "hark/storage/internal/disk_reader.h"

#include <utility>

#include "hark/core/base/log.h"
#include "hark/storage/message_format.h"

namespace hark::storage::internal {
namespace {

// The served prefix of a read buffer: whole, valid messages from `first` on.
struct ValidPrefix {
  uint64_t bytes = 0;
  uint32_t count = 0;
  Offset last;
};

ValidPrefix valid_prefix(std::span<const std::byte> buffer, Offset first, uint32_t count_max,
                         Offset end) {
  ValidPrefix prefix;
  Offset offset_min = first;
  while (prefix.count < count_max) {
    const CheckedMessage message =
        check_stored_message(buffer, static_cast<size_t>(prefix.bytes), offset_min);
    if (message.check != MessageCheck::ok || message.offset >= end) break;
    if (prefix.count == 0 && message.offset != first) break;
    prefix.bytes += message.bytes;
    prefix.count++;
    prefix.last = message.offset;
    offset_min = message.offset + 1;
  }
  return prefix;
}

}  // namespace

class DiskReader::ReadOp final : public io::Completion {
 public:
  explicit ReadOp(DiskReader& reader) : reader_(reader) {}

  void start(Request request, ReadCompletion& done) {
    request_ = std::move(request);
    done_ = &done;
    buffer_ = ChunkRef(Chunk::create(static_cast<size_t>(request_.bytes)));
    read_bytes_ = 0;
    submit();
  }

  void complete(int32_t result, uint32_t /*flags*/) override {
    if (result <= 0) {
      HARK_LOG_ERROR("disk read at position %u for offset %u failed: %s",
                     request_.position + read_bytes_, request_.first.value(),
                     result == 0 ? "end of file" : "io error");
      finish(Error::cannot_read_file);
      return;
    }
    read_bytes_ += static_cast<uint64_t>(result);
    if (read_bytes_ < request_.bytes) {
      submit();  // A short read: ask for the rest.
      return;
    }
    finish(view());
  }

 private:
  void submit() {
    const std::span<std::byte> rest(buffer_->data() + read_bytes_,
                                    static_cast<size_t>(request_.bytes - read_bytes_));
    request_.file->read(rest, request_.position + read_bytes_, *this);
  }

  Result<ReadView> view() {
    const std::span<const std::byte> bytes(buffer_->data(), static_cast<size_t>(request_.bytes));
    const ValidPrefix prefix = valid_prefix(bytes, request_.first, request_.count, request_.end);
    if (prefix.count == 0) {
      HARK_LOG_ERROR("corrupt message on disk at position %u (offset %u): not served",
                     request_.position, request_.first.value());
      return Error::invalid_message_checksum;
    }
    return ReadView(std::move(buffer_), bytes.first(static_cast<size_t>(prefix.bytes)),
                    prefix.count, request_.first, prefix.last);
  }

  // Hands the op back before calling out, so `done` may start another read at once.
  void finish(Result<ReadView> result) {
    ReadCompletion& done = *done_;
    done_ = nullptr;
    request_.file.reset();
    buffer_.reset();
    reader_.finished(*this);
    done.read_done(std::move(result));
  }

  DiskReader& reader_;
  Request request_{};
  ReadCompletion* done_ = nullptr;
  ChunkRef buffer_;
  uint64_t read_bytes_ = 0;
};

DiskReader::DiskReader(Disk& disk) : disk_(disk) {}

DiskReader::~DiskReader() { HARK_ASSERT(in_flight_ == 0); }

void DiskReader::read(Request request, ReadCompletion& done) {
  HARK_ASSERT(request.bytes > 0);
  HARK_ASSERT(request.count > 0);
  if (free_.empty()) {
    ops_.push_back(std::make_unique<ReadOp>(*this));
    free_.push_back(ops_.back().get());
  }
  ReadOp* op = free_.back();
  free_.pop_back();
  in_flight_++;
  op->start(std::move(request), done);
}

void DiskReader::finished(ReadOp& op) {
  HARK_ASSERT(in_flight_ > 0);
  in_flight_--;
  free_.push_back(&op);
}

void DiskReader::drain() {
  while (in_flight_ > 0) disk_.drive();
}

}  // namespace hark::storage::internal
