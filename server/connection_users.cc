// Connection's users, permissions and personal access tokens: the logins, the user and token
// commands (the slow parts on the AuthPool, answered back on this shard), and the permission
// check every request passes before its handler (Iggy 0.8.0's rules, permissioner.h).
// Control plane.
#include <optional>
#include <variant>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_responses.h"
#include "hark/server/command_table.h"
#include "hark/server/config.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"
#include "hark/server/users/login_throttle.h"
#include "hark/server/users/permissioner.h"

namespace hark::server {
namespace {

using protocol::Command;

protocol::UserResponse user_response(const UserRecord& user) {
  return {.id = user.id,
          .created_at = user.created_at,
          .status = user.status,
          .username = user.username};
}

protocol::UserDetailsResponse user_details(const UserRecord& user) {
  return {.user = user_response(user), .permissions = user.permissions};
}

// Failed logins that count towards a lockout: wrong credentials and unknown tokens (guesses).
LoginThrottle::Outcome outcome_of(const Status& status) {
  if (status.ok()) return LoginThrottle::Outcome::success;
  const Error error = status.error();
  return error == Error::invalid_credentials || error == Error::resource_not_found
             ? LoginThrottle::Outcome::failure
             : LoginThrottle::Outcome::other;
}

// A login on the pool thread: an attempt is reserved before the hash, so logins in flight
// count against the limit, and its outcome counted right after (LoginThrottle). A token's
// failures are remembered under the token text, which no success clears.
template <typename Check>
void throttled_login(UserJob& job, std::string_view username, Check check) {
  LoginThrottle& throttle = *job.throttle;
  if (!throttle.reserve(job.address, job.clock->monotonic_now())) {
    job.status = Error::unauthorized;
    job.login_throttled = true;
    return;
  }
  const Result<uint32_t> id = check();
  job.status = id.ok() ? ok_status() : Status(id.error());
  if (id.ok()) job.login_user_id = *id;
  job.lockout_started =
      throttle.finish(job.address, username, outcome_of(job.status), job.clock->monotonic_now());
}

}  // namespace

void UserJob::work() {
  HARK_ASSERT(store != nullptr);
  status = ok_status();
  std::visit(
      [this](const auto& r) {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, protocol::LoginUserRequest>) {
          throttled_login(*this, r.username, [&] { return store->login(r.username, r.password); });
        } else if constexpr (std::is_same_v<R, protocol::LoginWithPersonalAccessTokenRequest>) {
          throttled_login(*this, r.token, [&] { return store->login_with_token(r.token, now); });
        } else if constexpr (std::is_same_v<R, protocol::CreateUserRequest>) {
          auto created = store->create_user(r.username, r.password, r.status, r.permissions, now);
          status = created.ok() ? ok_status() : Status(created.error());
          if (created.ok()) user = std::move(created).value();
        } else if constexpr (std::is_same_v<R, protocol::DeleteUserRequest>) {
          const auto deleted = store->delete_user(r.user_id);
          status = deleted.ok() ? ok_status() : Status(deleted.error());
        } else if constexpr (std::is_same_v<R, protocol::UpdateUserRequest>) {
          const auto updated = store->update_user(user_id, r.user_id, r.username, r.status);
          status = updated.ok() ? ok_status() : Status(updated.error());
        } else if constexpr (std::is_same_v<R, protocol::UpdatePermissionsRequest>) {
          status = store->update_permissions(user_id, r.user_id, r.permissions);
        } else if constexpr (std::is_same_v<R, protocol::ChangePasswordRequest>) {
          status = store->change_password(user_id, r.user_id, r.current_password, r.new_password);
        } else if constexpr (std::is_same_v<R, protocol::CreatePersonalAccessTokenRequest>) {
          auto created = store->create_token(user_id, r.name, r.expiry, now, tokens_max);
          status = created.ok() ? ok_status() : Status(created.error());
          if (created.ok()) token = std::move(created).value();
        } else if constexpr (std::is_same_v<R, protocol::DeletePersonalAccessTokenRequest>) {
          status = store->delete_token(user_id, r.name);
        } else {
          HARK_UNREACHABLE();
        }
      },
      request);
}

void UserJob::run() { connection_.user_done(); }

const UserRecord* Connection::current_user() {
  UserStore& store = shard_.users();
  if (!users_ || users_->version != store.version()) users_ = store.snapshot();
  if (!authenticated()) return nullptr;
  const UserRecord* const user = users_->find(user_id_);
  if (user == nullptr) {
    HARK_LOG_INFO("connection %s: user %u was deleted; logged out", peer_, user_id_);
    logged_out();
  }
  return user;
}

Status Connection::authorize_target(Command command, protocol::Identifier* stream,
                                    protocol::Identifier* topic) {
  const Access access = access_of(command);
  if (access == Access::none) return ok_status();
  const UserRecord* const user = current_user();
  if (user == nullptr) return Error::unauthenticated;
  if (authorize(user->permissions, access, std::nullopt, std::nullopt).ok()) return ok_status();
  if (stream == nullptr || !access_needs_stream(access)) return Error::unauthorized;
  HARK_TRY_ASSIGN(const core::NameOrId stream_ref, name_or_id(*stream));
  std::optional<core::NameOrId> topic_ref;
  if (topic != nullptr && access_needs_topic(access)) {
    HARK_TRY_ASSIGN(topic_ref, name_or_id(*topic));
  }
  const auto ids = shard_.broker().resolve(stream_ref, topic_ref ? &*topic_ref : nullptr);
  if (!ids.ok()) {
    // Something named is missing. As in 0.8.0 that is answered before permissions: an
    // operation that runs on this shard meets the same catalog and answers it (not found, or
    // an empty answer); one applied by shard 0 gets the error here, so that it cannot act on
    // a stream created meanwhile under that name.
    // (The `applied` column of commands.inc.)
    return applied_by_shard_zero(command) ? Status(ids.error()) : ok_status();
  }
  const Status allowed = authorize(user->permissions, access, ids->stream, ids->topic);
  if (!allowed.ok()) {
    HARK_LOG_DEBUG("connection %s: user %u may not %s on stream %u", peer_, user->id,
                   protocol::command_name(protocol::command_code(command)), ids->stream);
    return allowed;
  }
  // From here the operation names what was checked, whatever is renamed meanwhile.
  *stream = protocol::Identifier::numeric(ids->stream);
  if (ids->topic) *topic = protocol::Identifier::numeric(*ids->topic);
  return ok_status();
}

Status Connection::submit_user_job(UserJob::Request request) {
  HARK_ASSERT(!user_busy_);
  user_job_.request = std::move(request);
  user_job_.store = &shard_.users();
  user_job_.user_id = user_id_;
  user_job_.now = shard_.realtime_now();
  user_job_.tokens_max = shard_.options().tokens_per_user_max;
  user_job_.throttle = &shard_.throttle();
  user_job_.address = host_of(peer_);
  user_job_.clock = &shard_.reactor().clock();
  user_job_.home = &shard_.reactor();
  user_job_.status = ok_status();
  user_job_.user.reset();
  user_job_.login_throttled = false;
  user_job_.lockout_started = false;
  user_job_.token.clear();
  user_busy_ = true;  // Before submit(): an abandoned job comes back through the inbox only.
  if (shard_.auth().submit(user_job_)) return ok_status();
  user_busy_ = false;
  user_job_.request = std::monostate{};
  HARK_LOG_WARN(
      "connection %s: request refused: %u logins and user commands already wait for "
      "a hash thread (auth.queue_max)",
      peer_, shard_.options().auth_queue_max);
  return Error::feature_unavailable;
}

void Connection::user_done() {
  HARK_ASSERT(user_busy_);
  user_busy_ = false;
  UserJob::Request request = std::exchange(user_job_.request, std::monostate{});
  if (phase_ == Phase::dropping) {
    close_if_idle();
    return;
  }
  if (user_job_.abandoned) {
    respond_error(Error::disconnected);  // Shutting down, as 0.8.0 refuses a login then.
    return;
  }
  const bool login = std::holds_alternative<protocol::LoginUserRequest>(request) ||
                     std::holds_alternative<protocol::LoginWithPersonalAccessTokenRequest>(request);
  if (!user_job_.status.ok()) {
    if (login) login_failed();
    respond_error(user_job_.status.error());
    return;
  }
  if (login) {
    logged_in(user_job_.login_user_id);
    respond_encoded(protocol::IdentityResponse{user_job_.login_user_id});
  } else if (std::holds_alternative<protocol::CreateUserRequest>(request)) {
    HARK_ASSERT(user_job_.user.has_value());
    respond_encoded(user_details(*user_job_.user));
  } else if (std::holds_alternative<protocol::CreatePersonalAccessTokenRequest>(request)) {
    respond_encoded(protocol::RawPersonalAccessTokenResponse{std::move(user_job_.token)});
    user_job_.token.clear();
  } else {
    respond_ok();
  }
}

void Connection::logged_in(uint32_t user_id) {
  if (authenticated() && user_id_ != user_id) {
    HARK_LOG_INFO("connection %s: user %u logs in again as user %u", peer_, user_id_, user_id);
  }
  user_id_ = user_id;
  if (phase_ == Phase::awaiting_login) enter(Phase::serving);  // Not if it closes meanwhile.
  shard_.clients().set_user(client_id_, user_id);
  HARK_LOG_DEBUG("connection %s: logged in as user %u", peer_, user_id);
}

void Connection::login_failed() {
  if (user_job_.login_throttled) {
    HARK_LOG_WARN(
        "connection %s: login refused: too many failed or concurrent logins from this address",
        peer_);
    return;
  }
  HARK_LOG_WARN("connection %s: login failed: %s", peer_, error_name(user_job_.status.error()));
  if (user_job_.lockout_started) {
    HARK_LOG_WARN(
        "logins from %s refused for %s after %u failed logins (auth.login_lockout, "
        "auth.login_failures_max)",
        user_job_.address, format_duration(shard_.options().login_lockout),
        shard_.options().login_failures_max);
  }
}

Status Connection::login_user(const protocol::LoginUserRequest& request) {
  HARK_TRY(check_username(request.username));
  HARK_TRY(check_password(request.password));
  if (!shard_.throttle().allowed(host_of(peer_), shard_.monotonic_now())) {
    HARK_LOG_WARN("connection %s: login refused: too many failed logins from this address", peer_);
    return Error::unauthorized;
  }
  return submit_user_job(request);
}

Status Connection::login_with_personal_access_token(
    const protocol::LoginWithPersonalAccessTokenRequest& request) {
  if (!shard_.throttle().allowed(host_of(peer_), shard_.monotonic_now())) {
    HARK_LOG_WARN("connection %s: token login refused: too many failed logins from this address",
                  peer_);
    return Error::unauthorized;
  }
  return submit_user_job(request);
}

Status Connection::logout_user(const protocol::LogoutUserRequest& /*request*/) {
  logged_out();  // Awaiting a login again: the login deadline runs anew.
  respond_ok();
  return ok_status();
}

Status Connection::get_user(const protocol::GetUserRequest& request) {
  const UserRecord* const me = current_user();
  HARK_ASSERT(me != nullptr);  // start_request() let only a logged-in user here.
  const UserRecord* const target = users_->find(request.user_id);
  if (target == nullptr) {
    respond_ok();  // An unknown user: OK with an empty payload, as in 0.8.0.
    return ok_status();
  }
  // Anyone may read themselves (0.8.0 query_user).
  if (target->id != me->id) {
    HARK_TRY(authorize(me->permissions, Access::read_users, std::nullopt, std::nullopt));
  }
  respond_encoded(user_details(*target));
  return ok_status();
}

Status Connection::get_users(const protocol::GetUsersRequest& /*request*/) {
  protocol::UsersResponse response;
  for (const auto& [id, user] : users_->users) response.users.push_back(user_response(user));
  respond_encoded(response);
  return ok_status();
}

Status Connection::create_user(const protocol::CreateUserRequest& request) {
  HARK_TRY(check_username(request.username));
  HARK_TRY(check_password(request.password));
  HARK_TRY(UserStore::check_status(request.status));
  return submit_user_job(request);
}

Status Connection::delete_user(const protocol::DeleteUserRequest& request) {
  return submit_user_job(request);
}

Status Connection::update_user(const protocol::UpdateUserRequest& request) {
  if (request.username) HARK_TRY(check_username(*request.username));
  if (request.status) HARK_TRY(UserStore::check_status(*request.status));
  return submit_user_job(request);
}

Status Connection::update_permissions(const protocol::UpdatePermissionsRequest& request) {
  return submit_user_job(request);
}

Status Connection::change_password(const protocol::ChangePasswordRequest& request) {
  HARK_TRY(check_password(request.current_password));
  HARK_TRY(check_password(request.new_password));
  const UserRecord* const me = current_user();
  HARK_ASSERT(me != nullptr);
  const UserRecord* const target = users_->find(request.user_id);
  if (target == nullptr) return Error::resource_not_found;
  // Their own password anyone may change (knowing it); another's needs manage_users.
  if (target->id != me->id) {
    HARK_TRY(authorize(me->permissions, Access::manage_users, std::nullopt, std::nullopt));
  }
  return submit_user_job(request);
}

Status Connection::get_personal_access_tokens(
    const protocol::GetPersonalAccessTokensRequest& /*request*/) {
  const UserRecord* const me = current_user();
  HARK_ASSERT(me != nullptr);
  protocol::PersonalAccessTokensResponse response;
  for (const TokenRecord& token : me->tokens) {
    response.tokens.push_back({.name = token.name, .expiry_at = token.expiry_at});
  }
  respond_encoded(response);
  return ok_status();
}

Status Connection::create_personal_access_token(
    const protocol::CreatePersonalAccessTokenRequest& request) {
  HARK_TRY(check_token_name(request.name));
  return submit_user_job(request);
}

Status Connection::delete_personal_access_token(
    const protocol::DeletePersonalAccessTokenRequest& request) {
  return submit_user_job(request);
}

}  // namespace hark::server
