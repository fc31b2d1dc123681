// The journal's SQLite schema (docs/agent.md, "Journal") and the connection settings: WAL,
// synchronous, foreign keys. Internal to src/agent.
#pragma once

#include "journal/sqlite_db.h"
#include "core/status.h"

namespace recur::agent {

inline constexpr int kJournalSchemaVersion = 1;

// Sets journal_mode=WAL (checked: a file system without shared memory refuses it),
// synchronous=FULL or NORMAL and foreign_keys=ON, then creates the tables of a new file or checks
// the version of an existing one (PRAGMA user_version).
Status prepare_journal_db(SqliteDb& db, bool synchronous_full);
// The schema version only (read-only connections): unsupported when it is not this recur's.
Status check_journal_schema(SqliteDb& db);

}  // namespace recur::agent
