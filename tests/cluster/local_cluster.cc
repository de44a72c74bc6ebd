#include "local_cluster.h"

#include <signal.h>

#include <fstream>
#include <mutex>
#include <utility>

#include <sys/stat.h>

namespace hark::test {

std::string LocalCluster::start(const Options& options) {
  options_ = options;
  if (std::string failed = etcd_.start(); !failed.empty()) return "etcd: " + failed;
  secret_file_ = etcd_.directory() + "/cluster-secret";
  std::ofstream(secret_file_) << options_.secret << "\n";
  if (::chmod(secret_file_.c_str(), 0600) != 0) return "chmod " + secret_file_ + " failed";
  runs_.resize(options_.nodes);
  if (options_.start_together) return start_together();
  for (uint32_t id = 1; id <= options_.nodes; id++) {
    if (std::string failed = start_node(id, ""); !failed.empty()) return failed;
  }
  return "";
}

std::string LocalCluster::start_together() {
  // Each thread touches only its node's slot of runs_ and of start_failures_.
  start_failures_.assign(options_.nodes, "");
  std::shared_future<void> released = release_.get_future().share();
  for (uint32_t id = 1; id <= options_.nodes; id++) {
    starters_.emplace_back([this, id, released] {
      start_failures_[id - 1] = start_node(id, "");
      {
        std::lock_guard lock(started_mutex_);
        started_count_++;
      }
      started_.notify_all();
      released.wait();  // The node dies with this thread (PR_SET_PDEATHSIG).
    });
  }
  std::unique_lock lock(started_mutex_);
  started_.wait(lock, [this] { return started_count_ == options_.nodes; });
  for (const std::string& failed : start_failures_) {
    if (!failed.empty()) return failed;
  }
  return "";
}

LocalCluster::~LocalCluster() {
  runs_.clear();
  if (!starters_.empty()) release_.set_value();
  for (std::thread& starter : starters_) starter.join();
}

HarkdProcess& LocalCluster::node(uint32_t id) { return *runs_.at(id - 1).back(); }

void LocalCluster::kill(uint32_t id) { node(id).signal(SIGKILL); }

std::string LocalCluster::restart(uint32_t id) {
  return start_node(id, runs_.at(id - 1).front()->data_directory());
}

std::unique_ptr<client::Client> LocalCluster::connect(uint32_t id) {
  auto client = std::make_unique<client::Client>();
  if (!client->connect(node(id).address()).ok() || !client->login("iggy", "iggy").ok()) {
    return nullptr;
  }
  return client;
}

std::vector<std::string> LocalCluster::arguments(uint32_t id) const {
  std::vector<std::string> arguments = {"--etcd",
                                        etcd_.url(),
                                        "--etcd-user",
                                        EtcdProcess::user,
                                        "--etcd-password",
                                        EtcdProcess::password,
                                        "--node-id",
                                        std::to_string(id),
                                        "--cluster-name",
                                        options_.name,
                                        "--cluster-lease-ttl",
                                        options_.lease_ttl,
                                        "--cluster-secret-file",
                                        secret_file_};
  arguments.insert(arguments.end(), options_.extra_args.begin(), options_.extra_args.end());
  return arguments;
}

std::string LocalCluster::start_node(uint32_t id, const std::string& data_directory) {
  HarkdProcess::Options options;
  options.harkd_path = HARK_HARKD_PATH;
  options.shards_count = options_.shards_count;
  options.data_directory = data_directory;
  options.extra_args = arguments(id);
  auto process = std::make_unique<HarkdProcess>();
  const bool started = process->start(options);
  std::string failed = started ? ""
                               : "node " + std::to_string(id) + ": " + process->error_text() +
                                     "\n" + process->stderr_tail();
  runs_.at(id - 1).push_back(std::move(process));
  return failed;
}

size_t members(client::Client& client) {
  const auto metadata = client.get_cluster_metadata();
  return metadata.ok() ? metadata->nodes.size() : 0;
}

}  // namespace hark::test
