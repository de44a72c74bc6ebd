#pragma once

// Every Operation a Broker runs (docs/embedding.md), by family.
#include "hark/core/broker/catalog_operations.h"      // IWYU pragma: export
#include "hark/core/broker/group_operations.h"        // IWYU pragma: export
#include "hark/core/broker/message_operations.h"      // IWYU pragma: export
#include "hark/core/broker/notify_operations.h"       // IWYU pragma: export
#include "hark/core/broker/operation.h"               // IWYU pragma: export
#include "hark/core/broker/replication_operations.h"  // IWYU pragma: export
#include "hark/core/broker/stats.h"                   // IWYU pragma: export
