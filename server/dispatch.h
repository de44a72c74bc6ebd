#pragma once

#include <cstdint>
#include <string_view>

#include "hark/core/base/result.h"
#include "hark/core/broker/operations.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/notify_requests.h"
#include "hark/protocol/notify_responses.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/send_messages.h"
#include "hark/protocol/stream_requests.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_requests.h"
#include "hark/server/client_registry.h"
#include "hark/server/options.h"

namespace hark::server {
namespace cluster {
struct ClusterView;
}

// The pure half of harkd's request handling: decoded protocol requests → the inputs of core
// Operations, and core results → protocol responses. No I/O and no state; Connection does the
// rest. Data plane for polls, sends and offsets (no allocation), control plane otherwise.

// Iggy 0.8.0's length rules (bytes): username 3..50 (else invalid_username 43), password
// 3..100 (else invalid_password 44), token name 3..30 (else
// invalid_personal_access_token_name 50).
Status check_username(std::string_view username);
Status check_password(std::string_view password);
Status check_token_name(std::string_view name);

// A stream or topic as the wire names it.
Result<core::NameOrId> name_or_id(const protocol::Identifier& id);

// A consumer: numeric ids as they are, named ones hashed with XXH32 as Iggy 0.8.0 does
// (protocol::consumer_id_of_name). A group is named by `group` instead (its id or name; the
// broker resolves it and sets the ConsumerRef's id). Errors: those of name_or_id().
Status fill_consumer(const protocol::Consumer& consumer, core::ConsumerRef& ref,
                     core::NameOrId& group);

// partition_id as is; balanced; messages_key → key_hash with XXH32 of the key (the broker
// takes it modulo the partition count, as Iggy 0.8.0).
core::Partitioning partitioning(const protocol::Partitioning& partitioning);

// A wait_timeout_us as a Duration: a u64 of µs, where Duration counts ns in an i64. Anything
// past what fits is "wait as long as allowed" (the broker clamps it to max_wait anyway).
Duration wait_of(uint64_t wait_timeout_us);

// Fills a poll from its request; `client_id` is the polling connection (a group member).
// wait_timeout_us becomes Poll::wait (the broker clamps it to its max_wait); a classic poll
// (no field) waits `classic_wait` (classic_poll_wait(), classic_wait.h). auto_commit is not
// passed on: the server stores the offset itself once the response is written. Errors: those
// of name_or_id().
Status fill_poll(const protocol::PollMessagesRequest& request, uint32_t client_id,
                 Duration classic_wait, core::Poll& poll);

// Notifications (docs/wire.md §11, docs/notifications.md): a Notify addressed as a poll is
// (consumer or group, stream, topic, optional partition, wait_timeout_us), `client_id` the
// waiting connection (a group member, or a watcher if it has not joined the group).
// wait_for_messages' strategy: next → past the stored offset, offset N → from N, first → from
// offset 0; last and timestamp → feature_unavailable (5), the core has no such start.
// Errors: those of name_or_id().
Status fill_wait_for_messages(const protocol::WaitForMessagesRequest& request, uint32_t client_id,
                              core::Notify& notify);
Status fill_wait_for_lag(const protocol::WaitForLagRequest& request, uint32_t client_id,
                         core::Notify& notify);
// The name and parameters as sent: the broker refuses an unknown name (20) or parameters
// its condition does not accept (4).
Status fill_wait_for_condition(const protocol::WaitForConditionRequest& request, uint32_t client_id,
                               core::Notify& notify);
// A finished Notify's answers. A timeout has none: each is then an empty payload (for a lag
// watch, nullopt), as a poll's timeout.
protocol::WaitForMessagesResponse wait_for_messages_response(const core::Notify& notify);
std::optional<protocol::WaitForLagResponse> wait_for_lag_response(const core::Notify& notify);
protocol::WaitForConditionResponse wait_for_condition_response(const core::Notify& notify);

// Fills an append from a decoded send. `request`'s message views must outlive the append.
Status fill_append(const protocol::SendMessagesRequest& request, core::Append& append);

Status fill_create_topic(const protocol::CreateTopicRequest& request, core::CreateTopic& create);
Status fill_update_topic(const protocol::UpdateTopicRequest& request, core::UpdateTopic& update);

// The largest payload among a send's messages, for the message size limit.
uint32_t largest_payload(const protocol::MessageBatchView& messages);

// The poll response header of a result: partition, current offset, messages count.
protocol::PollResponseHeader poll_header(const core::PollResult& result);

protocol::StreamResponse stream_response(const core::StreamInfo& stream);
protocol::StreamDetailsResponse stream_details_response(const core::StreamDetails& details);
protocol::StreamsResponse streams_response(const std::vector<core::StreamInfo>& streams);
protocol::TopicResponse topic_response(const core::TopicInfo& topic);
protocol::TopicDetailsResponse topic_details_response(const core::TopicDetails& details);
protocol::TopicsResponse topics_response(const std::vector<core::TopicInfo>& topics);
protocol::ConsumerGroupResponse group_response(const core::GroupInfo& group);
protocol::ConsumerGroupDetailsResponse group_details_response(const core::GroupDetails& details);
protocol::ConsumerGroupsResponse groups_response(const std::vector<core::GroupInfo>& groups);

// get_me and get_client: the client and the groups it is a member of (`memberships` may list
// other members too; only `client`'s are taken).
protocol::ClientDetailsResponse client_details_response(
    const ClientInfo& client, const std::vector<core::GroupMembership>& memberships);
// get_clients: every client with the number of groups it is a member of.
protocol::ClientsResponse clients_response(const std::vector<ClientInfo>& clients,
                                           const std::vector<core::GroupMembership>& memberships);
// get_cluster_metadata. Cluster disabled (the default): one node in cluster "single-node",
// named node_name, at the advertised address (or the bound one) and its TCP port; leader,
// healthy; no other transports (port 0). Cluster enabled: cluster_name, then this node
// (cluster_node_name at cluster_node_ip, the TCP port as above, cluster_node_ports; leader)
// and each of cluster_others (followers), all healthy, as Iggy 0.8.0 reports its config.
// Code 12. With a cluster view (cluster mode): the live members, this node (view.self) the
// one Leader, so clients that redirect to the Leader stay where they are; a draining node names
// the lowest live member that is not draining instead, so those clients leave it.
protocol::ClusterMetadataResponse cluster_metadata_response(
    const ServerOptions& options, const cluster::ClusterView* view = nullptr);

// Requires: offset.stored has a value (nothing stored is answered with an empty payload).
protocol::ConsumerOffsetResponse consumer_offset_response(const core::GetOffset& offset);

}  // namespace hark::server
