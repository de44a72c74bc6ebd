#include "hark/server/cluster/etcd_gateway.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <mutex>

#include <absl/strings/escaping.h>
#include <curl/curl.h>
#include <nlohmann/json.hpp>

namespace hark::server::cluster {
namespace {

using Json = nlohmann::json;

// grpc-gateway writes int64 as a JSON string ("5") and omits zero values; a number is
// accepted too. Absent: 0. Malformed: false.
bool read_int(const Json& object, const char* name, int64_t& out) {
  out = 0;
  const auto found = object.find(name);
  if (found == object.end()) return true;
  if (found->is_number_integer()) {
    out = found->get<int64_t>();
    return true;
  }
  if (!found->is_string()) return false;
  const std::string& text = found->get_ref<const std::string&>();
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// A base64 bytes field; absent is "".
bool read_bytes(const Json& object, const char* name, std::string& out) {
  out.clear();
  const auto found = object.find(name);
  if (found == object.end()) return true;
  return found->is_string() && absl::Base64Unescape(found->get_ref<const std::string&>(), &out);
}

bool read_bool(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found != object.end() && found->is_boolean() && found->get<bool>();
}

const Json* child(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found == object.end() || !found->is_object() ? nullptr : &*found;
}

const Json* child_array(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found == object.end() || !found->is_array() ? nullptr : &*found;
}

std::string b64(std::string_view bytes) {
  return absl::Base64Escape(absl::string_view(bytes.data(), bytes.size()));
}

bool parse_kv(const Json& object, KeyValue& kv) {
  return object.is_object() && read_bytes(object, "key", kv.key) &&
         read_bytes(object, "value", kv.value) &&
         read_int(object, "create_revision", kv.create_revision) &&
         read_int(object, "mod_revision", kv.mod_revision) &&
         read_int(object, "version", kv.version) && read_int(object, "lease", kv.lease);
}

bool header_revision(const Json& object, int64_t& revision) {
  const Json* header = child(object, "header");
  return header != nullptr && read_int(*header, "revision", revision);
}

Result<RangeResult> parse_range(const Json& object) {
  RangeResult result;
  if (!header_revision(object, result.revision)) return Error::invalid_format;
  if (const Json* kvs = child_array(object, "kvs")) {
    for (const Json& item : *kvs) {
      KeyValue kv;
      if (!parse_kv(item, kv)) return Error::invalid_format;
      result.kvs.push_back(std::move(kv));
    }
  }
  return result;
}

void set_range(Json& request, std::string_view key, bool prefix) {
  request["key"] = b64(key);
  if (prefix) request["range_end"] = b64(prefix_end(key));
}

Json compare_json(const Compare& compare) {
  static constexpr const char* targets[] = {"VALUE", "CREATE", "MOD", "VERSION"};
  static constexpr const char* fields[] = {"value", "create_revision", "mod_revision", "version"};
  static constexpr const char* ops[] = {"EQUAL", "NOT_EQUAL", "GREATER", "LESS"};
  const auto target = static_cast<size_t>(compare.target);
  Json json{{"key", b64(compare.key)},
            {"target", targets[target]},
            {"result", ops[static_cast<size_t>(compare.op)]}};
  if (compare.target == Compare::Target::value) {
    json[fields[target]] = b64(compare.value);
  } else {
    json[fields[target]] = std::to_string(compare.number);
  }
  return json;
}

Json op_json(const TxnOp& op) {
  Json body;
  switch (op.kind) {
    case TxnOp::Kind::put:
      body = {{"key", b64(op.key)}, {"value", b64(op.value)}};
      if (op.lease != 0) body["lease"] = std::to_string(op.lease);
      return {{"request_put", body}};
    case TxnOp::Kind::erase:
      set_range(body, op.key, op.prefix);
      return {{"request_delete_range", body}};
    case TxnOp::Kind::range: set_range(body, op.key, op.prefix); return {{"request_range", body}};
  }
  return body;
}

Json txn_json(const Txn& txn) {
  Json json = Json::object();
  json["compare"] = Json::array();
  json["success"] = Json::array();
  json["failure"] = Json::array();
  for (const Compare& compare : txn.compare) json["compare"].push_back(compare_json(compare));
  for (const TxnOp& op : txn.success) json["success"].push_back(op_json(op));
  for (const TxnOp& op : txn.failure) json["failure"].push_back(op_json(op));
  return json;
}

Result<TxnResult> parse_txn(const Json& object) {
  TxnResult result;
  if (!header_revision(object, result.revision)) return Error::invalid_format;
  result.succeeded = read_bool(object, "succeeded");
  if (const Json* responses = child_array(object, "responses")) {
    for (const Json& response : *responses) {
      if (!response.is_object()) return Error::invalid_format;
      const Json* range = child(response, "response_range");
      if (range == nullptr) continue;
      HARK_TRY_ASSIGN(RangeResult read, parse_range(*range));
      result.ranges.push_back(std::move(read));
    }
  }
  return result;
}

bool parse_event(const Json& object, WatchEvent& event) {
  const auto type = object.find("type");
  event.type =
      type != object.end() && *type == "DELETE" ? WatchEvent::Type::erase : WatchEvent::Type::put;
  const Json* kv = child(object, "kv");
  return kv != nullptr && parse_kv(*kv, event.kv);
}

// gRPC status codes etcd answers with (in the gateway's {"code": N} error body).
Error error_of_grpc(int64_t code) {
  switch (code) {
    case 5: return Error::resource_not_found;            // NotFound: "requested lease not found".
    case 7: return Error::unauthorized;                  // PermissionDenied.
    case 16: return Error::unauthenticated;              // Unauthenticated: bad or expired token.
    case 3: return Error::invalid_configuration;         // InvalidArgument.
    case 14: return Error::cannot_establish_connection;  // Unavailable: no leader.
    default: return Error::error;
  }
}

size_t append_body(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

long millis(Duration duration) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(duration).count());
}

}  // namespace

// A watch stream's state while curl reads it: lines of JSON, the first batch of events (or a
// compaction) ends the read.
struct WatchRead {
  std::string buffer;
  WatchBatch batch;
  bool done = false;
  bool malformed = false;
  // etcd created the watch and cancelled it at once (cancel_reason in `error`): an auth
  // token etcd no longer knows (a restarted etcd forgets its simple tokens), or a permission.
  bool canceled = false;
  std::string error;

  void line(std::string_view text);
};

void WatchRead::line(std::string_view text) {
  const Json object = Json::parse(text, nullptr, false);
  const Json* result = object.is_object() ? child(object, "result") : nullptr;
  if (result == nullptr) {
    malformed = true;
    error = std::string(text.substr(0, 200));
    done = true;
    return;
  }
  int64_t compact = 0;
  if (!read_int(*result, "compact_revision", compact)) malformed = true;
  if (compact != 0) {  // etcd cancels such a watch too: the compaction is what it means.
    batch.compacted = true;
    batch.compact_revision = compact;
    done = true;
    return;
  }
  if (read_bool(*result, "canceled")) {
    canceled = true;
    const auto reason = result->find("cancel_reason");
    error = reason != result->end() && reason->is_string() ? reason->get<std::string>()
                                                           : "watch cancelled";
    done = true;
    return;
  }
  const Json* events = child_array(*result, "events");
  if (events == nullptr || events->empty()) return;
  for (const Json& item : *events) {
    WatchEvent event;
    if (!item.is_object() || !parse_event(item, event)) {
      malformed = true;
      break;
    }
    batch.revision = std::max(batch.revision, event.kv.mod_revision);
    batch.events.push_back(std::move(event));
  }
  done = true;
}

namespace {

size_t append_watch(char* data, size_t size, size_t count, void* out) {
  auto* read = static_cast<WatchRead*>(out);
  read->buffer.append(data, size * count);
  size_t newline = 0;
  while (!read->done && (newline = read->buffer.find('\n')) != std::string::npos) {
    read->line(std::string_view(read->buffer).substr(0, newline));
    read->buffer.erase(0, newline + 1);
  }
  return read->done ? 0 : size * count;  // 0 ends the transfer once a batch is in.
}

}  // namespace

struct EtcdGateway::Impl {
  GatewayOptions options;
  CURL* calls = nullptr;
  CURL* watches = nullptr;
  CURLM* multi = nullptr;          // Runs `watches`, so wake() can end its wait.
  std::atomic<bool> woken{false};  // Set by wake(), taken by the watch.
  size_t endpoint = 0;             // The one that answered last.
  std::string token;
  std::string last_error;

  ~Impl() {
    if (calls != nullptr) curl_easy_cleanup(calls);
    if (watches != nullptr) curl_easy_cleanup(watches);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  curl_slist* headers() const;
  // One POST to one endpoint: the HTTP status and body, or cannot_establish_connection.
  Result<long> post(CURL* handle, const std::string& url, const std::string& body, Duration timeout,
                    curl_write_callback write, void* out);
  // curl_easy_perform for calls; for the watch, the multi loop that wake() can end (then
  // `interrupted` is set and the code is CURLE_OK).
  CURLcode perform(CURL* handle, bool& interrupted);
  Result<Json> call_once(std::string_view path, const std::string& body);
  Result<Json> call(std::string_view path, const Json& body);
  Status authenticate();
  Result<WatchBatch> watch(const Json& request, Duration wait);
};

curl_slist* EtcdGateway::Impl::headers() const {
  curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!token.empty()) list = curl_slist_append(list, ("Authorization: " + token).c_str());
  return list;
}

Result<long> EtcdGateway::Impl::post(CURL* handle, const std::string& url, const std::string& body,
                                     Duration timeout, curl_write_callback write, void* out) {
  curl_slist* list = headers();
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, write);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, millis(timeout));
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, millis(options.connect_timeout));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  if (!options.ca_file.empty()) curl_easy_setopt(handle, CURLOPT_CAINFO, options.ca_file.c_str());
  if (!options.cert_file.empty()) {
    curl_easy_setopt(handle, CURLOPT_SSLCERT, options.cert_file.c_str());
    curl_easy_setopt(handle, CURLOPT_SSLKEY, options.key_file.c_str());
  }
  // curl's own words for a failure ("SSL certificate problem: unable to get local issuer
  // certificate"), which curl_easy_strerror's generic text lacks.
  char detail[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, detail);
  bool interrupted = false;
  const CURLcode code = perform(handle, interrupted);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(list);
  if (interrupted) {
    static_cast<WatchRead*>(out)->done = true;  // Nothing read: an empty batch.
    return 200;
  }
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  // A watch ends its own transfer (write error) or runs out its wait (timeout): both normal.
  const bool watch_end =
      write == append_watch && (code == CURLE_WRITE_ERROR || code == CURLE_OPERATION_TIMEDOUT);
  if (code != CURLE_OK && !(watch_end && status != 0)) {
    last_error = url + ": " + (detail[0] != 0 ? detail : curl_easy_strerror(code));
    return Error::cannot_establish_connection;
  }
  return status;
}

CURLcode EtcdGateway::Impl::perform(CURL* handle, bool& interrupted) {
  if (handle != watches) return curl_easy_perform(handle);
  curl_multi_add_handle(multi, handle);
  CURLcode code = CURLE_OK;
  for (;;) {
    if (woken.exchange(false)) {
      interrupted = true;
      break;
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    bool done = false;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      code = message->data.result;
      done = true;
    }
    if (done || running == 0) break;
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  // Removing a transfer that did not end closes its connection: the next watch opens another.
  curl_multi_remove_handle(multi, handle);
  return code;
}

Result<Json> EtcdGateway::Impl::call_once(std::string_view path, const std::string& body) {
  const size_t count = options.endpoints.size();
  for (size_t attempt = 0; attempt < count; attempt++) {
    const size_t index = (endpoint + attempt) % count;
    std::string response;
    const Result<long> status = post(calls, options.endpoints[index] + std::string(path), body,
                                     options.request_timeout, append_body, &response);
    if (!status.ok()) continue;
    endpoint = index;
    Json json = Json::parse(response, nullptr, false);
    if (!json.is_object()) {
      last_error = std::string(path) + ": not JSON: " + response.substr(0, 200);
      return Error::invalid_format;
    }
    if (*status == 200) return json;
    int64_t code = 0;
    (void)read_int(json, "code", code);
    const auto message = json.find("message");
    last_error = std::string(path) + ": " +
                 (message != json.end() && message->is_string() ? message->get<std::string>()
                                                                : response.substr(0, 200));
    return error_of_grpc(code);
  }
  return Error::cannot_establish_connection;
}

Status EtcdGateway::Impl::authenticate() {
  token.clear();
  const Json body{{"name", options.user}, {"password", options.password}};
  Result<Json> answer = call_once("/v3/auth/authenticate", body.dump());
  // etcd refuses a wrong user or password as InvalidArgument: for harkd it is unauthenticated.
  if (!answer.ok()) {
    return answer.error() == Error::cannot_establish_connection ? answer.error()
                                                                : Error::unauthenticated;
  }
  const auto found = answer->find("token");
  if (found == answer->end() || !found->is_string()) return Error::invalid_format;
  token = found->get<std::string>();
  return ok_status();
}

// Authenticates first when a user is configured and no token is held, and once more when etcd
// says the token is no longer valid (simple tokens expire when idle).
Result<Json> EtcdGateway::Impl::call(std::string_view path, const Json& body) {
  if (!options.user.empty() && token.empty()) HARK_TRY(authenticate());
  const std::string text = body.dump();
  Result<Json> answer = call_once(path, text);
  if (answer.ok() || answer.error() != Error::unauthenticated || options.user.empty()) {
    return answer;
  }
  HARK_TRY(authenticate());
  return call_once(path, text);
}

Result<WatchBatch> EtcdGateway::Impl::watch(const Json& request, Duration wait) {
  if (!options.user.empty() && token.empty()) HARK_TRY(authenticate());
  const std::string body = request.dump();
  WatchRead read;
  const std::string url = options.endpoints[endpoint] + "/v3/watch";
  // curl reads a zero timeout as none: a watch always waits a little.
  const Duration timeout = std::max<Duration>(wait, std::chrono::milliseconds(100));
  HARK_TRY_ASSIGN(long status, post(watches, url, body, timeout, append_watch, &read));
  if (status != 200 || read.malformed || read.canceled) {
    last_error = "/v3/watch: " + (read.error.empty() ? read.buffer.substr(0, 200) : read.error);
    // The next watch (and call) authenticates again: the step after this one recovers.
    if (read.error.find("auth") != std::string::npos) token.clear();
    if (read.canceled) return Error::unauthenticated;
    return status == 200 ? Error::invalid_format : Error::error;
  }
  return std::move(read.batch);
}

Result<std::unique_ptr<EtcdGateway>> EtcdGateway::create(GatewayOptions options) {
  if (options.endpoints.empty()) return Error::invalid_configuration;
  static std::once_flag global;
  std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  auto impl = std::make_unique<Impl>();
  for (std::string& endpoint : options.endpoints) {
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  }
  impl->options = std::move(options);
  impl->calls = curl_easy_init();
  impl->watches = curl_easy_init();
  impl->multi = curl_multi_init();
  if (impl->calls == nullptr || impl->watches == nullptr || impl->multi == nullptr) {
    return Error::error;
  }
  return std::unique_ptr<EtcdGateway>(new EtcdGateway(std::move(impl)));
}

EtcdGateway::EtcdGateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtcdGateway::~EtcdGateway() = default;

const std::string& EtcdGateway::last_error() const { return impl_->last_error; }

Result<RangeResult> EtcdGateway::range(std::string_view key, bool prefix) {
  Json request = Json::object();
  set_range(request, key, prefix);
  HARK_TRY_ASSIGN(Json answer, impl_->call("/v3/kv/range", request));
  return parse_range(answer);
}

Result<int64_t> EtcdGateway::put(std::string_view key, std::string_view value, int64_t lease) {
  Json request{{"key", b64(key)}, {"value", b64(value)}};
  if (lease != 0) request["lease"] = std::to_string(lease);
  HARK_TRY_ASSIGN(Json answer, impl_->call("/v3/kv/put", request));
  int64_t revision = 0;
  if (!header_revision(answer, revision)) return Error::invalid_format;
  return revision;
}

Result<int64_t> EtcdGateway::erase(std::string_view key, bool prefix) {
  Json request = Json::object();
  set_range(request, key, prefix);
  HARK_TRY_ASSIGN(Json answer, impl_->call("/v3/kv/deleterange", request));
  int64_t revision = 0;
  if (!header_revision(answer, revision)) return Error::invalid_format;
  return revision;
}

Result<TxnResult> EtcdGateway::txn(const Txn& txn) {
  HARK_TRY_ASSIGN(Json answer, impl_->call("/v3/kv/txn", txn_json(txn)));
  return parse_txn(answer);
}

Result<Lease> EtcdGateway::lease_grant(int64_t ttl_seconds) {
  HARK_TRY_ASSIGN(Json answer,
                  impl_->call("/v3/lease/grant", Json{{"TTL", std::to_string(ttl_seconds)}}));
  Lease lease;
  if (!read_int(answer, "ID", lease.id) || !read_int(answer, "TTL", lease.ttl_seconds) ||
      lease.id == 0) {
    return Error::invalid_format;
  }
  return lease;
}

// The gateway streams keep-alives; one request body gives one {"result": ...} and the end.
// etcd answers an expired lease with TTL 0 (omitted), not an error.
Result<int64_t> EtcdGateway::lease_keep_alive(int64_t id) {
  HARK_TRY_ASSIGN(Json answer,
                  impl_->call("/v3/lease/keepalive", Json{{"ID", std::to_string(id)}}));
  const Json* result = child(answer, "result");
  int64_t ttl = 0;
  if (result == nullptr || !read_int(*result, "TTL", ttl)) return Error::invalid_format;
  if (ttl <= 0) return Error::resource_not_found;
  return ttl;
}

Status EtcdGateway::lease_revoke(int64_t id) {
  HARK_TRY_ASSIGN(Json answer, impl_->call("/v3/lease/revoke", Json{{"ID", std::to_string(id)}}));
  (void)answer;
  return ok_status();
}

Result<int64_t> EtcdGateway::lease_time_to_live(int64_t id) {
  HARK_TRY_ASSIGN(Json answer,
                  impl_->call("/v3/lease/timetolive", Json{{"ID", std::to_string(id)}}));
  int64_t ttl = 0;
  if (!read_int(answer, "TTL", ttl)) return Error::invalid_format;
  if (ttl < 0) return Error::resource_not_found;
  return ttl;
}

void EtcdGateway::wake() {
  impl_->woken.store(true);
  curl_multi_wakeup(impl_->multi);
}

Result<WatchBatch> EtcdGateway::watch(std::string_view key, bool prefix, int64_t from_revision,
                                      Duration wait) {
  Json create = Json::object();
  set_range(create, key, prefix);
  if (from_revision > 0) create["start_revision"] = std::to_string(from_revision);
  HARK_TRY_ASSIGN(WatchBatch batch, impl_->watch(Json{{"create_request", create}}, wait));
  if (batch.revision == 0) batch.revision = from_revision - 1;
  return batch;
}

}  // namespace hark::server::cluster
