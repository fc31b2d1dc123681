// A thin RAII layer over SQLite for the journal: a connection, prepared statements and
// transactions, every error naming the database path and the step that failed:
//   "journal runs/j.db: finish experiment (run 3, step 7): database is locked (SQLITE_BUSY)"
// One connection per thread (not thread-safe); several processes may open the same file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace recur::agent {

class SqliteDb;

class Statement {
 public:
  Statement(Statement&& o) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind_null(int index);
  // Runs to the next row: true when a row is available, false when done.
  Result<bool> step();
  // Runs a statement that returns no rows.
  Status run();
  void reset();

  int64_t column_int(int i) const;
  double column_double(int i) const;
  std::string column_text(int i) const;
  bool column_is_null(int i) const;
  std::optional<double> column_optional_double(int i) const;

 private:
  friend class SqliteDb;
  Statement(const SqliteDb& db, sqlite3_stmt* stmt, std::string step) : db_(&db), stmt_(stmt), step_(std::move(step)) {}
  const SqliteDb* db_;
  sqlite3_stmt* stmt_;
  std::string step_;
  Status bind_status_;  // the first bind error, reported by step()
};

class SqliteDb {
 public:
  // create=false: the file must exist.
  // read_only: SQLITE_OPEN_READONLY (never creates, never writes; `create` is ignored).
  static Result<std::unique_ptr<SqliteDb>> open(const std::string& path, bool create, int busy_timeout_ms,
                                                bool read_only = false);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }
  // One or more statements without parameters or results.
  Status exec(std::string_view sql, std::string_view step);
  Result<Statement> prepare(std::string_view sql, std::string_view step) const;
  // The first column of the first row as text ("" when no row), e.g. for PRAGMAs.
  Result<std::string> query_text(std::string_view sql, std::string_view step) const;
  // "journal PATH: STEP: <sqlite message> (<code name>)".
  Error error(std::string_view step, int rc) const;

 private:
  SqliteDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::string path_;
  sqlite3* db_;
};

// BEGIN IMMEDIATE (takes the write lock up front, so a writer waits at BEGIN for busy_timeout
// rather than failing at its first write); rolls back unless commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> begin(SqliteDb& db, std::string_view step);
  Transaction(Transaction&& o) noexcept : db_(o.db_), step_(std::move(o.step_)), open_(o.open_) { o.open_ = false; }
  ~Transaction();
  Status commit();

 private:
  Transaction(SqliteDb& db, std::string step) : db_(&db), step_(std::move(step)) {}
  SqliteDb* db_;
  std::string step_;
  bool open_ = true;
};

}  // namespace recur::agent
