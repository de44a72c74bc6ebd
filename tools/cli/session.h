#pragma once

#include <string>
#include <string_view>

#include "hark/core/base/error.h"
#include "hark/tools/cli/args.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/stop.h"
#include "hark/tools/client/client.h"

namespace hark::cli {

// The process's exit status: 0 done, 1 the server or the connection failed, 2 bad arguments.
// `hark wait` and `hark lag` use their own meanings, which scripts rely on: 1 the timeout
// passed with nothing (timed_out), 2 any failure, arguments or otherwise (wait_failed).
enum class ExitCode : int { ok = 0, failed = 1, usage = 2, timed_out = 1, wait_failed = 2 };

// What one command runs with: the output streams, the global options, the stop request, and
// the client (connected by open()). Prints the failures of the command in the CLI's formats,
// so every command reports the same way. Owned by run_cli() for one command. Control plane.
class Session {
 public:
  // `usage` is the command's usage line, for usage errors. All references must outlive the
  // Session.
  Session(Streams& streams, const GlobalOptions& options, const Stop& stop, std::string usage);

  // Connects to options().address and, when `login`, logs in (password or token). On failure
  // prints why (and returns false).
  [[nodiscard]] bool open(bool login = true);

  client::Client& client() { return client_; }
  Streams& streams() { return streams_; }
  const GlobalOptions& options() const { return options_; }
  const Stop& stop() const { return stop_; }

  // Prints `text` on the output stream, as is.
  void print(std::string_view text);

  // Prints a failed call's error and returns ExitCode::failed. A server's error:
  // "error: Name (code): message"; a lost connection, a timeout, a response that does not
  // decode: what happened to the connection, then "Name (code)".
  ExitCode fail(Error error, const ErrorSubjects& subjects = {});

  // Prints "hark: <reason>" and the usage line on the error stream; returns ExitCode::usage.
  ExitCode usage_error(std::string_view reason);

 private:
  Streams& streams_;
  const GlobalOptions& options_;
  const Stop& stop_;
  std::string usage_;
  client::Client client_;
};

}  // namespace hark::cli
