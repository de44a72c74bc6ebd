#include "hark/server/classic_wait.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "hark/server/dispatch.h"

namespace hark::server {
namespace {

// A stream as a configuration entry names it: digits are an id, anything else a name.
Result<core::NameOrId> entry_stream(std::string_view entry) {
  uint32_t id = 0;
  const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), id);
  if (error == std::errc() && end == entry.data() + entry.size()) return core::NameOrId::id(id);
  return core::NameOrId::name(entry);
}

std::optional<uint32_t> stream_id(const core::Broker& broker,
                                  const Result<core::NameOrId>& stream) {
  if (!stream.ok()) return std::nullopt;
  const Result<core::Broker::ResolvedIds> ids = broker.resolve(*stream, nullptr);
  if (!ids.ok()) return std::nullopt;
  return ids->stream;
}

bool user_in_scope(const ServerOptions& options, std::string_view username) {
  return std::any_of(options.classic_default_wait_users.begin(),
                     options.classic_default_wait_users.end(), [&](const std::string& entry) {
                       return entry == "*" || (!username.empty() && entry == username);
                     });
}

bool stream_in_scope(const ServerOptions& options, const core::Broker& broker,
                     const protocol::Identifier& stream) {
  if (options.classic_default_wait_streams.empty()) return false;
  const std::optional<uint32_t> polled_id = stream_id(broker, name_or_id(stream));
  if (!polled_id) return false;  // The poll itself will answer "not found".
  return std::any_of(options.classic_default_wait_streams.begin(),
                     options.classic_default_wait_streams.end(), [&](const std::string& entry) {
                       return stream_id(broker, entry_stream(entry)) == polled_id;
                     });
}

}  // namespace

Duration classic_poll_wait(const ServerOptions& options, const core::Broker& broker,
                           const UserRecord* user, const protocol::PollMessagesRequest& request) {
  if (request.wait_timeout_us || options.classic_default_wait == Duration(0)) return Duration(0);
  const std::string_view username = user != nullptr ? std::string_view(user->username) : "";
  if (user_in_scope(options, username) || stream_in_scope(options, broker, request.stream_id)) {
    return options.classic_default_wait;
  }
  return Duration(0);
}

}  // namespace hark::server
