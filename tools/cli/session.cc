#include "hark/tools/cli/session.h"

#include <chrono>

#include "hark/core/base/log.h"

namespace hark::cli {
namespace {

client::ClientOptions client_options(const Stop& stop, const GlobalOptions& global) {
  client::ClientOptions options;
  options.cancel_fd = stop.fd();
  options.tls = global.tls;
  return options;
}

void write_line(std::FILE* stream, std::string_view text) {
  log::flush();  // With --verbose, the client's detail comes before the summary line.
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fputc('\n', stream);
  std::fflush(stream);
}

}  // namespace

Session::Session(Streams& streams, const GlobalOptions& options, const Stop& stop,
                 std::string usage)
    : streams_(streams),
      options_(options),
      stop_(stop),
      usage_(std::move(usage)),
      client_(client_options(stop, options)) {}

bool Session::open(bool login) {
  const Status connected = client_.connect(options_.address);
  if (!connected.ok()) {
    write_line(streams_.err, "error: cannot connect to " + options_.address + ": " +
                                 error_label(connected.error()));
    return false;
  }
  if (!login) return true;
  const Result<protocol::IdentityResponse> identity =
      options_.token ? client_.login_with_token(*options_.token)
                     : client_.login(options_.username, options_.password);
  if (!identity.ok()) {
    ErrorSubjects subjects;
    subjects.user = options_.username;
    fail(identity.error(), subjects);
    return false;
  }
  return true;
}

void Session::print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), streams_.out);
  std::fflush(streams_.out);
}

ExitCode Session::fail(Error error, const ErrorSubjects& subjects) {
  if (error == Error::client_shutdown) {
    write_line(streams_.err, "error: stopped before " + options_.address + " answered");
  } else if (error == Error::invalid_bytes_response) {
    write_line(streams_.err, "error: the answer from " + options_.address +
                                 " does not decode as expected: " + error_label(error));
  } else if (client_.connected()) {
    write_line(streams_.err, error_line(error, subjects));  // The server said no.
  } else if (error == Error::task_timeout) {
    write_line(streams_.err,
               "error: no answer from " + options_.address + " in time: " + error_label(error));
  } else {
    write_line(streams_.err,
               "error: connection to " + options_.address + " failed: " + error_label(error));
  }
  return ExitCode::failed;
}

ExitCode Session::usage_error(std::string_view reason) {
  write_line(streams_.err, "hark: " + std::string(reason));
  write_line(streams_.err, "usage: " + usage_);
  write_line(streams_.err, "Run 'hark help' or add --help for more.");
  return ExitCode::usage;
}

}  // namespace hark::cli
