#include "hark/core/broker/name_or_id.h"

#include <algorithm>

namespace hark::core {

Result<NameOrId> NameOrId::name(std::string_view name) {
  if (name.empty() || name.size() > name_size_max) return Error::invalid_format;
  NameOrId ref;
  ref.name_length_ = static_cast<uint8_t>(name.size());
  std::copy(name.begin(), name.end(), ref.name_.begin());
  return ref;
}

}  // namespace hark::core
