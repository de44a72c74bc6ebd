#include "hark/server/cluster/coordination_thread.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "hark/core/base/clock.h"
#include "hark/core/base/log.h"

namespace hark::server::cluster {

CoordinationThread::CoordinationThread(CoordinationOptions options, ViewSink& sink)
    : options_(std::move(options)), sink_(sink) {}

CoordinationThread::~CoordinationThread() { stop(); }

void CoordinationThread::start() {
  thread_ = std::thread([this] { run(); });
}

void CoordinationThread::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stopped_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool CoordinationThread::pause(Duration duration) {
  std::unique_lock lock(mutex_);
  stopped_.wait_for(lock, duration, [this] { return stopping_ || woken_; });
  woken_ = false;
  return !stopping_;
}

void CoordinationThread::wake() {
  if (etcd_ != nullptr) etcd_->wake();
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  stopped_.notify_all();
}

void CoordinationThread::report_moves(NodeAgent& agent) {
  if (options_.moves == nullptr) return;
  bool reachable = true;
  for (const ShardReports::Ready& ready : options_.moves->take()) {
    const Ref<const ClusterView> view = agent.view();
    const std::optional<Move> move = view ? view->move_of(ready.key) : std::nullopt;
    if (!move || move->epoch != ready.epoch || move->ready) continue;  // Gone or done.
    const Result<bool> marked =
        reachable ? agent.report_move_ready(ready.key) : Result<bool>(Error::feature_unavailable);
    if (!marked.ok()) {
      reachable = false;
      options_.moves->put_back(ready);  // etcd away: a later step tries again.
      continue;
    }
    HARK_LOG_INFO("cluster: move of %u/%u/%u at epoch %u %s", ready.key.stream.value(),
                  ready.key.topic.value(), ready.key.partition.value(), ready.epoch,
                  *marked ? "marked ready" : "changed meanwhile: not marked");
  }
}

void CoordinationThread::change_isrs(NodeAgent& agent) {
  if (options_.moves == nullptr) return;
  for (ShardReports::IsrChange& change : options_.moves->take_isr()) {
    const Result<NodeAgent::IsrChange> changed =
        agent.change_isr(change.key, change.epoch, change.isr);
    const char* outcome = !changed.ok()                               ? "not written (etcd)"
                          : *changed == NodeAgent::IsrChange::applied ? "written"
                          : *changed == NodeAgent::IsrChange::deposed ? "refused: not the leader"
                                                                      : "stale: asked again";
    std::string isr;
    for (const uint32_t node : change.isr) isr += (isr.empty() ? "" : ",") + std::to_string(node);
    HARK_LOG_INFO("cluster: in-sync set of %u/%u/%u at epoch %u -> [%s]: %s",
                  change.key.stream.value(), change.key.topic.value(), change.key.partition.value(),
                  change.epoch, isr, outcome);
  }
}

void CoordinationThread::run() {
  log::set_thread_name("hark-coord");
  Result<std::unique_ptr<EtcdGateway>> gateway = EtcdGateway::create(options_.etcd);
  HARK_ASSERT(gateway.ok());  // The configuration has at least one endpoint.
  NodeAgent agent(**gateway, SystemClock::instance(), options_.agent);
  const Duration wait = std::chrono::seconds(options_.agent.lease_ttl_seconds) / 6;
  std::optional<MetadataSync> metadata;
  if (options_.journal != nullptr) {
    metadata.emplace(
        *options_.journal, *options_.entries,
        MetadataSyncOptions{.self = options_.agent.self.id,
                            .ack_timeout = std::chrono::seconds(options_.agent.lease_ttl_seconds)});
    etcd_ = gateway->get();
    options_.journal->set_waker(this);
  }
  if (options_.moves != nullptr) options_.moves->set_waker(this);
  constexpr Duration backoff_min = std::chrono::milliseconds(100);
  constexpr Duration backoff_max = std::chrono::seconds(5);
  Duration backoff = backoff_min;
  uint64_t published = 0;
  while (pause(Duration(0))) {
    // While a command waits for the others, their progress is read at every step: step often.
    const bool waiting = metadata && metadata->waiting();
    const Status stepped = agent.step(waiting ? std::chrono::milliseconds(5) : wait);
    if (options_.health != nullptr) options_.health->stepped(stepped.ok());
    if (stepped.ok()) {
      report_moves(agent);
      change_isrs(agent);
    }
    // The shards get the new view before this node's metadata progress is published: a
    // command answered on that progress is then routable here (docs/cluster.md §Metadata).
    const Ref<const ClusterView> view = agent.view();
    if (view && view->version != published) {
      published = view->version;
      sink_.publish_cluster_view(view);
    }
    if (metadata) {
      metadata->step(**gateway, agent, SystemClock::instance().monotonic_now(), stepped.ok());
    }
    if (!stepped.ok()) {
      HARK_LOG_ERROR("cluster: etcd at %s: %s (%s); retrying in %d ms",
                     options_.etcd.endpoints.front(), std::string(error_name(stepped.error())),
                     (*gateway)->last_error(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
      if (!pause(backoff)) break;
      backoff = std::min(backoff * 2, backoff_max);
      continue;
    }
    backoff = backoff_min;
  }
  if (options_.moves != nullptr) options_.moves->set_waker(nullptr);
  if (metadata) {
    options_.journal->set_waker(nullptr);
    etcd_ = nullptr;
    metadata->stop();
  }
  if (!agent.leave().ok()) {
    HARK_LOG_WARN("cluster: could not revoke the lease on leaving: %s", (*gateway)->last_error());
  }
}

}  // namespace hark::server::cluster
