#pragma once

// Every Operation a Broker runs (docs/embedding.md), by family.
#include "core/broker/catalog_operations.h"  // IWYU pragma: export
#include "core/broker/group_operations.h"    // IWYU pragma: export
#include "core/broker/message_operations.h"  // IWYU pragma: export
#include "core/broker/operation.h"           // IWYU pragma: export
#include "core/broker/stats.h"               // IWYU pragma: export
