#include "local_cluster.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <utility>

#include <sys/stat.h>

#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"

namespace hark::test {

std::string LocalCluster::start(const Options& options) {
  options_ = options;
  if (std::string failed = etcd_.start(); !failed.empty()) return "etcd: " + failed;
  secret_file_ = etcd_.directory() + "/cluster-secret";
  std::ofstream(secret_file_) << options_.secret << "\n";
  if (::chmod(secret_file_.c_str(), 0600) != 0) return "chmod " + secret_file_ + " failed";
  runs_.resize(options_.nodes);
  link_tls_args_.assign(options_.nodes, {});
  if (options_.link_tls) issue_link_certificates();
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

std::string LocalCluster::stop_all() {
  std::string unclean;
  for (uint32_t id = 1; id <= runs_.size(); id++) {
    if (runs_[id - 1].empty() || !node(id).running()) continue;
    ::kill(node(id).pid(), SIGCONT);
    const ProcessExit exit = node(id).stop();
    if (!exit.clean()) {
      unclean += "node " + std::to_string(id) + ": " + describe(exit) + "\n" +
                 node(id).stderr_tail() + "\n";
    }
  }
  return unclean;
}

std::string LocalCluster::restart(uint32_t id) {
  return start_node(id, runs_.at(id - 1).front()->data_directory());
}

std::map<std::string, std::string> LocalCluster::segment_files(uint32_t id, uint32_t partition) {
  namespace fs = std::filesystem;
  const fs::path directory = fs::path(node(id).data_directory()) / "streams/0/topics/0/partitions" /
                             std::to_string(partition);
  std::map<std::string, std::string> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const fs::path& path = entry.path();
    if (path.extension() != ".log" && path.extension() != ".index") continue;
    std::ifstream in(path, std::ios::binary);
    files[path.filename()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

std::string LocalCluster::bound_link_address(uint32_t id) {
  // The current process's own stderr (each run has its own).
  std::ifstream in(node(id).stderr_path());
  const std::string marker = "node links on ";
  std::string line;
  std::string found;
  while (std::getline(in, line)) {
    const size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    const size_t start = at + marker.size();
    found = line.substr(start, line.find_first_of(" \"", start) - start);
  }
  return found;
}

std::string LocalCluster::create_topic_everywhere(client::Client& client, uint32_t partitions) {
  if (!client.create_stream({.name = "s"}).ok()) return "create stream s failed";
  protocol::CreateTopicRequest topic;
  topic.stream_id = protocol::Identifier::numeric(0);
  topic.partitions_count = partitions;
  topic.name = "t";
  if (!client.create_topic(topic).ok()) return "create topic t failed";
  for (uint32_t id = 1; id <= options_.nodes; id++) {
    const bool settled = wait_for_stats(node(id), [&](const HarkdStats& stats) {
      return stats.view_assignments == partitions && stats.view_nodes == options_.nodes;
    });
    if (!settled)
      return "node " + std::to_string(id) + "'s view never settled:\n" + node(id).stderr_tail();
  }
  return "";
}

bool LocalCluster::wait_for_all_members() {
  for (uint32_t id = 1; id <= options_.nodes; id++) {
    const bool all = wait_for_stats(
        node(id), [&](const HarkdStats& stats) { return stats.view_nodes == options_.nodes; });
    if (!all) return false;
  }
  return true;
}

uint32_t LocalCluster::owner_of(uint32_t stream, uint32_t topic, uint32_t partition) {
  const auto assignment = assignment_of(stream, topic, partition);
  return assignment ? assignment->node : 0;
}

std::optional<server::cluster::Assignment> LocalCluster::assignment_of(uint32_t stream,
                                                                       uint32_t topic,
                                                                       uint32_t partition) {
  auto etcd = server::cluster::EtcdGateway::create(
      {.endpoints = {etcd_.url()}, .user = EtcdProcess::user, .password = EtcdProcess::password});
  if (!etcd.ok()) return std::nullopt;
  const auto range =
      (*etcd)->range("/hark/" + options_.name + "/assignments/" + std::to_string(stream) + "/" +
                         std::to_string(topic) + "/" + std::to_string(partition),
                     false);
  if (!range.ok() || range->kvs.size() != 1) return std::nullopt;
  return server::cluster::decode_assignment(range->kvs[0].value);
}

std::unique_ptr<client::Client> LocalCluster::connect(uint32_t id) {
  auto client = std::make_unique<client::Client>();
  if (!client->connect(node(id).address()).ok() || !client->login("iggy", "iggy").ok()) {
    return nullptr;
  }
  return client;
}

std::string LocalCluster::connect_all(
    std::map<uint32_t, std::unique_ptr<client::Client>>& clients) {
  for (uint32_t id = 1; id <= size(); id++) {
    clients[id] = connect(id);
    if (clients[id] == nullptr) return "no client could connect to node " + std::to_string(id);
  }
  return "";
}

std::string LocalCluster::link_address(uint32_t id) {
  auto etcd = server::cluster::EtcdGateway::create(
      {.endpoints = {etcd_.url()}, .user = EtcdProcess::user, .password = EtcdProcess::password});
  if (!etcd.ok()) return "";
  const auto range =
      (*etcd)->range("/hark/" + options_.name + "/nodes/" + std::to_string(id), false);
  if (!range.ok() || range->kvs.empty()) return "";
  const auto info = server::cluster::decode_node(range->kvs[0].value);
  return info ? info->link_address : "";
}

void LocalCluster::issue_link_certificates() {
  // A directory per CA: TestCa names its own files ca.pem and ca.key.
  for (const char* name : {"/link-ca", "/other-ca"}) {
    std::filesystem::create_directories(etcd_.directory() + name);
  }
  link_ca_ = std::make_unique<TestCa>(etcd_.directory() + "/link-ca");
  for (uint32_t id = 1; id <= options_.nodes; id++) {
    const auto& other = options_.link_tls_other_ca;
    const bool rogue = std::find(other.begin(), other.end(), id) != other.end();
    if (rogue && other_ca_ == nullptr) {
      other_ca_ = std::make_unique<TestCa>(etcd_.directory() + "/other-ca");
    }
    TestCa& ca = rogue ? *other_ca_ : *link_ca_;
    const CertFiles files = ca.issue("node-" + std::to_string(id), {"IP:127.0.0.1", "localhost"});
    link_tls_args_[id - 1] = {"--node-link-tls-cert", files.cert,  "--node-link-tls-key", files.key,
                              "--node-link-tls-ca",   ca.ca_file()};
  }
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
  const std::vector<std::string>& tls = link_tls_args_.at(id - 1);
  arguments.insert(arguments.end(), tls.begin(), tls.end());
  arguments.insert(arguments.end(), options_.extra_args.begin(), options_.extra_args.end());
  if (const auto own = options_.node_args.find(id); own != options_.node_args.end()) {
    arguments.insert(arguments.end(), own->second.begin(), own->second.end());
  }
  return arguments;
}

std::string LocalCluster::start_node(uint32_t id, const std::string& data_directory) {
  HarkdProcess::Options options;
  options.harkd_path = options_.harkd_path.empty() ? HARK_HARKD_PATH : options_.harkd_path;
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

bool all_threads_stopped(pid_t pid) {
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t state = line.rfind(") ");
    if (state == std::string::npos || line[state + 2] != 'T') return false;
  }
  return !error;
}

size_t members(client::Client& client) {
  const auto metadata = client.get_cluster_metadata();
  return metadata.ok() ? metadata->nodes.size() : 0;
}

}  // namespace hark::test
