#include "hark/tools/cli/args.h"

#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

// True if `name` is one of the space-separated words of `names`.
bool listed(std::string_view names, std::string_view name) {
  while (!names.empty()) {
    const size_t space = names.find(' ');
    if (names.substr(0, space) == name) return true;
    if (space == std::string_view::npos) break;
    names.remove_prefix(space + 1);
  }
  return false;
}

// The first of the given sources that is set.
std::string first_set(std::initializer_list<std::optional<std::string_view>> sources,
                      std::string_view fallback) {
  for (const std::optional<std::string_view>& source : sources) {
    if (source) return std::string(*source);
  }
  return std::string(fallback);
}

}  // namespace

std::optional<std::string_view> CommandLine::value(std::string_view name) const {
  const auto found = flags.find(name);
  if (found == flags.end()) return std::nullopt;
  return std::string_view(found->second);
}

Parsed<CommandLine> parse_command_line(std::span<const std::string_view> args,
                                       std::string_view value_flags,
                                       std::string_view switch_flags) {
  CommandLine line;
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (flags_ended || arg == "-" || !arg.starts_with("-")) {
      line.positionals.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (arg == "-h") {
      line.flags["help"] = "";
      continue;
    }
    std::string_view name = arg.substr(arg.starts_with("--") ? 2 : 1);
    std::optional<std::string_view> inline_value;
    if (const size_t equals = name.find('='); equals != std::string_view::npos) {
      inline_value = name.substr(equals + 1);
      name = name.substr(0, equals);
    }
    if (listed(switch_flags, name)) {
      if (inline_value)
        return Parsed<CommandLine>::failure("--" + std::string(name) + " takes no value");
      line.flags[std::string(name)] = "";
    } else if (listed(value_flags, name)) {
      if (!inline_value && i + 1 == args.size()) {
        return Parsed<CommandLine>::failure("--" + std::string(name) + " needs a value");
      }
      line.flags[std::string(name)] = std::string(inline_value ? *inline_value : args[++i]);
    } else {
      return Parsed<CommandLine>::failure("unknown flag " + std::string(arg));
    }
  }
  return line;
}

std::optional<std::string_view> Environment::get(std::string_view name) const {
  const auto found = values.find(name);
  if (found == values.end() || found->second.empty()) return std::nullopt;
  return std::string_view(found->second);
}

Parsed<GlobalOptions> resolve_global_options(const CommandLine& line,
                                             const Environment& environment) {
  GlobalOptions options;
  const std::string address = first_set(
      {line.value("address"), environment.get("HARK_ADDRESS"), environment.get("IGGY_TCP_ADDRESS")},
      options.address);
  const std::string_view address_source = line.has("address")                   ? "--address"
                                          : environment.get("HARK_ADDRESS")     ? "HARK_ADDRESS"
                                          : environment.get("IGGY_TCP_ADDRESS") ? "IGGY_TCP_ADDRESS"
                                                                                : "address";
  Parsed<std::string> parsed_address = parse_address(address, address_source);
  if (!parsed_address.ok()) return failed_as<GlobalOptions>(parsed_address);
  options.address = std::move(parsed_address).value();
  options.username = first_set(
      {line.value("username"), environment.get("HARK_USERNAME"), environment.get("IGGY_USERNAME")},
      options.username);
  options.password = first_set(
      {line.value("password"), environment.get("HARK_PASSWORD"), environment.get("IGGY_PASSWORD")},
      options.password);
  const bool credentials_flagged = line.has("username") || line.has("password");
  if (line.has("tls-ca")) {
    options.tls.ca_file = std::string(*line.value("tls-ca"));
  } else if (environment.get("HARK_TLS_CA")) {
    options.tls.ca_file = std::string(*environment.get("HARK_TLS_CA"));
  }
  if (line.has("tls-server-name")) {
    options.tls.server_name = std::string(*line.value("tls-server-name"));
  }
  options.tls.enabled =
      line.has("tls") || !options.tls.ca_file.empty() || !options.tls.server_name.empty();
  if (line.has("token") && line.value("token")->empty()) {
    return Parsed<GlobalOptions>::failure("--token needs a value");
  }
  if (line.has("token")) {
    options.token = std::string(*line.value("token"));
  } else if (!credentials_flagged && environment.get("HARK_TOKEN")) {
    options.token = std::string(*environment.get("HARK_TOKEN"));
  }
  options.verbose = line.has("verbose");
  return options;
}

}  // namespace hark::cli
