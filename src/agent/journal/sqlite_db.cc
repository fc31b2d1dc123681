#include "journal/sqlite_db.h"

#include <sqlite3.h>

#include <fmt/format.h>

namespace recur::agent {

Statement::Statement(Statement&& o) noexcept
    : db_(o.db_), stmt_(o.stmt_), step_(std::move(o.step_)), bind_status_(std::move(o.bind_status_)) {
  o.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

namespace {

void keep_first(Status& s, const SqliteDb& db, std::string_view step, int rc) {
  if (rc != SQLITE_OK && s) s = unexpected(db.error(step, rc));
}

}  // namespace

Statement& Statement::bind(int index, int64_t value) {
  keep_first(bind_status_, *db_, step_, sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  keep_first(bind_status_, *db_, step_, sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  keep_first(bind_status_, *db_, step_,
             sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_null(int index) {
  keep_first(bind_status_, *db_, step_, sqlite3_bind_null(stmt_, index));
  return *this;
}

Result<bool> Statement::step() {
  RECUR_RETURN_IF_ERROR(bind_status_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return unexpected(db_->error(step_, rc));
}

Status Statement::run() {
  RECUR_ASSIGN_OR_RETURN(bool row, step());
  (void)row;
  return ok_status();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::column_int(int i) const { return sqlite3_column_int64(stmt_, i); }
double Statement::column_double(int i) const { return sqlite3_column_double(stmt_, i); }
bool Statement::column_is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

std::string Statement::column_text(int i) const {
  const unsigned char* p = sqlite3_column_text(stmt_, i);
  const int n = sqlite3_column_bytes(stmt_, i);
  return p ? std::string(reinterpret_cast<const char*>(p), size_t(n)) : std::string();
}

std::optional<double> Statement::column_optional_double(int i) const {
  if (column_is_null(i)) return std::nullopt;
  return column_double(i);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::string& path, bool create, int busy_timeout_ms, bool read_only) {
  sqlite3* db = nullptr;
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)) |
                    SQLITE_OPEN_FULLMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    if ((!create || read_only) && rc == SQLITE_CANTOPEN) return not_found("journal {}: no such journal ({})", path, msg);
    return io_error("journal {}: open: {} ({})", path, msg, sqlite3_errstr(rc));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return std::unique_ptr<SqliteDb>(new SqliteDb(path, db));
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

Error SqliteDb::error(std::string_view step, int rc) const {
  const char* msg = sqlite3_errmsg(db_);
  const ErrorCode code = (rc & 0xff) == SQLITE_CONSTRAINT ? ErrorCode::kFailedPrecondition
                         : (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB ? ErrorCode::kParse
                                                                                          : ErrorCode::kIo;
  return Error(code, fmt::format("journal {}: {}: {} ({})", path_, step, msg ? msg : "?", sqlite3_errstr(rc)));
}

Status SqliteDb::exec(std::string_view sql, std::string_view step) {
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return unexpected(error(step, rc));
  return ok_status();
}

Result<Statement> SqliteDb::prepare(std::string_view sql, std::string_view step) const {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), int(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return unexpected(error(step, rc));
  return Statement(*this, stmt, std::string(step));
}

Result<std::string> SqliteDb::query_text(std::string_view sql, std::string_view step) const {
  RECUR_ASSIGN_OR_RETURN(Statement s, prepare(sql, step));
  RECUR_ASSIGN_OR_RETURN(bool row, s.step());
  return row ? s.column_text(0) : std::string();
}

Result<Transaction> Transaction::begin(SqliteDb& db, std::string_view step) {
  RECUR_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE", step));
  return Transaction(db, std::string(step));
}

Transaction::~Transaction() {
  if (open_) (void)db_->exec("ROLLBACK", step_);
}

Status Transaction::commit() {
  RECUR_RETURN_IF_ERROR(db_->exec("COMMIT", step_));
  open_ = false;
  return ok_status();
}

}  // namespace recur::agent
