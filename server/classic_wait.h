#pragma once

#include "hark/core/base/units.h"
#include "hark/core/broker/broker.h"
#include "hark/protocol/message_requests.h"
#include "hark/server/options.h"
#include "hark/server/users/user_store.h"

namespace hark::server {

// The wait harkd gives a poll that sent no wait_timeout_us (a classic poll: every released
// Iggy SDK) when `options` scope one to it: options.classic_default_wait if `username` is in
// classic_default_wait_users (or "*" is), or the poll's stream is in
// classic_default_wait_streams (entries are names or ids; they and the poll's stream are
// compared as the calling shard's catalog resolves them). Zero otherwise, and for any poll that
// sent the field (even 0). `user` is the logged-in user (null: none). On a shard of `broker`
// only (its catalog). Data plane: no allocation; a few lookups only when the setting is on.
Duration classic_poll_wait(const ServerOptions& options, const core::Broker& broker,
                           const UserRecord* user, const protocol::PollMessagesRequest& request);

}  // namespace hark::server
