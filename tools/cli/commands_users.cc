// user create | list | get | update | delete | password | permissions;
// token create | list | delete. harkd answers these with FeatureUnavailable (5) until it has
// users; the requests are the ones Iggy 0.8.0 expects, so they work against it today.
#include <optional>
#include <string>

#include "hark/tools/cli/command_support.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::Identifier;

std::string status_text(uint8_t status) {
  return status == 1 ? "active" : status == 2 ? "inactive" : std::to_string(status);
}

std::string global_permissions_text(const protocol::GlobalPermissions& global) {
  const std::pair<const char*, bool> names[] = {
      {"manage_servers", global.manage_servers}, {"read_servers", global.read_servers},
      {"manage_users", global.manage_users},     {"read_users", global.read_users},
      {"manage_streams", global.manage_streams}, {"read_streams", global.read_streams},
      {"manage_topics", global.manage_topics},   {"read_topics", global.read_topics},
      {"poll_messages", global.poll_messages},   {"send_messages", global.send_messages}};
  std::string text;
  for (const auto& [name, granted] : names) {
    if (granted) text += (text.empty() ? "" : ",") + std::string(name);
  }
  return text.empty() ? "none" : text;
}

std::string permissions_text(const std::optional<protocol::Permissions>& permissions) {
  if (!permissions) return "none";
  std::string text = global_permissions_text(permissions->global);
  if (!permissions->streams.empty()) {
    text += " (and per-stream permissions on " + std::to_string(permissions->streams.size()) +
            " stream(s))";
  }
  return text;
}

ErrorSubjects user_subjects(const std::string& user) { return {.user = user}; }

}  // namespace

ExitCode run_user_create(Session& session, const Invocation& invocation) {
  protocol::CreateUserRequest request{.username = invocation.args[0],
                                      .password = invocation.args[1]};
  if (request.username.empty() || request.username.size() > Identifier::name_size_max) {
    return session.usage_error("USERNAME: 1 to 255 bytes");
  }
  if (request.password.size() > Identifier::name_size_max) {
    return session.usage_error("PASSWORD: at most 255 bytes");
  }
  if (const auto text = invocation.line.value("status")) {
    const Parsed<uint8_t> status = parse_user_status(*text);
    if (!status.ok()) return session.usage_error(status.reason());
    request.status = *status;
  }
  if (const auto text = invocation.line.value("permissions")) {
    const Parsed<protocol::Permissions> permissions = parse_permissions(*text);
    if (!permissions.ok()) return session.usage_error(permissions.reason());
    request.permissions = *permissions;
  }
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::UserDetailsResponse> user = session.client().create_user(request);
  if (!user.ok()) return session.fail(user.error(), user_subjects(request.username));
  session.print("created user " + named_id(user->user.username, user->user.id) + "\n");
  return ExitCode::ok;
}

ExitCode run_user_list(Session& session, const Invocation& /*invocation*/) {
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::UsersResponse> users = session.client().get_users();
  if (!users.ok()) return session.fail(users.error());
  Table table({"ID", "USERNAME", "STATUS", "CREATED"});
  for (const protocol::UserResponse& user : users->users) {
    table.add({std::to_string(user.id), user.username, status_text(user.status),
               time_text(user.created_at)});
  }
  session.print(table.text());
  return ExitCode::ok;
}

ExitCode run_user_get(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "USER");
  if (!id.ok()) return session.usage_error(id.reason());
  if (!session.open()) return ExitCode::failed;
  const auto details = session.client().get_user({.user_id = *id});
  if (!details.ok()) return session.fail(details.error(), user_subjects(invocation.args[0]));
  if (!details->has_value()) {
    return session.fail(Error::resource_not_found, user_subjects(invocation.args[0]));
  }
  const protocol::UserResponse& user = (*details)->user;
  session.print(fields_text({{"id", std::to_string(user.id)},
                             {"username", user.username},
                             {"status", status_text(user.status)},
                             {"created", time_text(user.created_at)},
                             {"permissions", permissions_text((*details)->permissions)}}));
  return ExitCode::ok;
}

ExitCode run_user_update(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "USER");
  if (!id.ok()) return session.usage_error(id.reason());
  protocol::UpdateUserRequest request{.user_id = *id};
  if (const auto name = invocation.line.value("name")) {
    if (name->empty() || name->size() > Identifier::name_size_max) {
      return session.usage_error("--name: 1 to 255 bytes");
    }
    request.username = std::string(*name);
  }
  if (const auto text = invocation.line.value("status")) {
    const Parsed<uint8_t> status = parse_user_status(*text);
    if (!status.ok()) return session.usage_error(status.reason());
    request.status = *status;
  }
  if (!request.username && !request.status) {
    return session.usage_error("nothing to update: give --name or --status");
  }
  if (!session.open()) return ExitCode::failed;
  const Status status = session.client().update_user(request);
  if (!status.ok()) return session.fail(status.error(), user_subjects(invocation.args[0]));
  session.print("updated user " + invocation.args[0] + "\n");
  return ExitCode::ok;
}

ExitCode run_user_delete(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "USER");
  if (!id.ok()) return session.usage_error(id.reason());
  if (!session.open()) return ExitCode::failed;
  const Status status = session.client().delete_user({.user_id = *id});
  if (!status.ok()) return session.fail(status.error(), user_subjects(invocation.args[0]));
  session.print("deleted user " + invocation.args[0] + "\n");
  return ExitCode::ok;
}

ExitCode run_user_password(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "USER");
  if (!id.ok()) return session.usage_error(id.reason());
  if (invocation.args[1].size() > Identifier::name_size_max ||
      invocation.args[2].size() > Identifier::name_size_max) {
    return session.usage_error("passwords: at most 255 bytes");
  }
  if (!session.open()) return ExitCode::failed;
  const Status status = session.client().change_password(
      {.user_id = *id, .current_password = invocation.args[1], .new_password = invocation.args[2]});
  if (!status.ok()) return session.fail(status.error(), user_subjects(invocation.args[0]));
  session.print("changed the password of user " + invocation.args[0] + "\n");
  return ExitCode::ok;
}

ExitCode run_user_permissions(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "USER");
  if (!id.ok()) return session.usage_error(id.reason());
  const Parsed<protocol::Permissions> permissions = parse_permissions(invocation.args[1]);
  if (!permissions.ok()) return session.usage_error(permissions.reason());
  if (!session.open()) return ExitCode::failed;
  const Status status =
      session.client().update_permissions({.user_id = *id, .permissions = *permissions});
  if (!status.ok()) return session.fail(status.error(), user_subjects(invocation.args[0]));
  session.print("set the permissions of user " + invocation.args[0] + " to " +
                global_permissions_text(permissions->global) + "\n");
  return ExitCode::ok;
}

ExitCode run_token_create(Session& session, const Invocation& invocation) {
  protocol::CreatePersonalAccessTokenRequest request{.name = invocation.args[0]};
  if (request.name.empty() || request.name.size() > Identifier::name_size_max) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  if (const auto text = invocation.line.value("expiry")) {
    const Parsed<uint64_t> expiry = parse_expiry_us(*text, "--expiry");
    if (!expiry.ok()) return session.usage_error(expiry.reason());
    request.expiry = *expiry == UINT64_MAX ? 0 : *expiry;  // The wire's "never" is 0 here.
  }
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::RawPersonalAccessTokenResponse> token =
      session.client().create_personal_access_token(request);
  ErrorSubjects subjects{.user = session.options().username, .token = request.name};
  if (!token.ok()) return session.fail(token.error(), subjects);
  session.print(token->token + "\n");
  return ExitCode::ok;
}

ExitCode run_token_list(Session& session, const Invocation& /*invocation*/) {
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::PersonalAccessTokensResponse> tokens =
      session.client().get_personal_access_tokens();
  if (!tokens.ok()) return session.fail(tokens.error());
  Table table({"NAME", "EXPIRES"});
  for (const protocol::PersonalAccessTokenInfo& token : tokens->tokens) {
    table.add({token.name, token.expiry_at == 0 ? "never" : time_text(token.expiry_at)});
  }
  session.print(table.text());
  return ExitCode::ok;
}

ExitCode run_token_delete(Session& session, const Invocation& invocation) {
  const std::string& name = invocation.args[0];
  if (name.empty() || name.size() > Identifier::name_size_max) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  if (!session.open()) return ExitCode::failed;
  const Status status = session.client().delete_personal_access_token({.name = name});
  ErrorSubjects subjects{.user = session.options().username, .token = name};
  if (!status.ok()) return session.fail(status.error(), subjects);
  session.print("deleted personal access token '" + name + "'\n");
  return ExitCode::ok;
}

}  // namespace hark::cli
