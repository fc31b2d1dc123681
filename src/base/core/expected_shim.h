// The std::expected subset recur uses, for compilers whose library lacks it (see expected.h).
// Storage is a tagged union; semantics follow the standard for the members provided.
#pragma once

#include <cassert>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace recur::shim {

template <typename E>
class unexpected {
 public:
  template <typename Err = E>
  constexpr explicit unexpected(Err&& e) : error_(std::forward<Err>(e)) {}
  constexpr const E& error() const& { return error_; }
  constexpr E& error() & { return error_; }
  constexpr E&& error() && { return std::move(error_); }

 private:
  E error_;
};
template <typename E>
unexpected(E) -> unexpected<E>;

template <typename T, typename E>
class expected {
 public:
  using value_type = T;
  using error_type = E;

  expected() requires std::is_default_constructible_v<T> : has_(true) { new (&val_) T(); }
  template <typename U = T>
    requires(!std::is_same_v<std::remove_cvref_t<U>, expected> &&
             std::is_constructible_v<T, U>)
  expected(U&& v) : has_(true) {
    new (&val_) T(std::forward<U>(v));
  }
  template <typename G>
  expected(const unexpected<G>& u) : has_(false) {
    new (&err_) E(u.error());
  }
  template <typename G>
  expected(unexpected<G>&& u) : has_(false) {
    new (&err_) E(std::move(u).error());
  }
  expected(const expected& o) : has_(o.has_) {
    if (has_) new (&val_) T(o.val_);
    else new (&err_) E(o.err_);
  }
  expected(expected&& o) noexcept : has_(o.has_) {
    if (has_) new (&val_) T(std::move(o.val_));
    else new (&err_) E(std::move(o.err_));
  }
  expected& operator=(const expected& o) {
    if (this != &o) {
      destroy();
      has_ = o.has_;
      if (has_) new (&val_) T(o.val_);
      else new (&err_) E(o.err_);
    }
    return *this;
  }
  expected& operator=(expected&& o) noexcept {
    if (this != &o) {
      destroy();
      has_ = o.has_;
      if (has_) new (&val_) T(std::move(o.val_));
      else new (&err_) E(std::move(o.err_));
    }
    return *this;
  }
  ~expected() { destroy(); }

  bool has_value() const { return has_; }
  explicit operator bool() const { return has_; }
  T& operator*() & { assert(has_); return val_; }
  const T& operator*() const& { assert(has_); return val_; }
  T&& operator*() && { assert(has_); return std::move(val_); }
  T* operator->() { assert(has_); return &val_; }
  const T* operator->() const { assert(has_); return &val_; }
  T& value() & { assert(has_); return val_; }
  const T& value() const& { assert(has_); return val_; }
  T&& value() && { assert(has_); return std::move(val_); }
  E& error() & { assert(!has_); return err_; }
  const E& error() const& { assert(!has_); return err_; }
  E&& error() && { assert(!has_); return std::move(err_); }
  template <typename U>
  T value_or(U&& fallback) const& {
    return has_ ? val_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void destroy() {
    if (has_) val_.~T();
    else err_.~E();
  }
  bool has_;
  union {
    T val_;
    E err_;
  };
};

template <typename E>
class expected<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  expected() : has_(true) {}
  template <typename G>
  expected(const unexpected<G>& u) : has_(false) {
    new (&err_) E(u.error());
  }
  template <typename G>
  expected(unexpected<G>&& u) : has_(false) {
    new (&err_) E(std::move(u).error());
  }
  expected(const expected& o) : has_(o.has_) {
    if (!has_) new (&err_) E(o.err_);
  }
  expected(expected&& o) noexcept : has_(o.has_) {
    if (!has_) new (&err_) E(std::move(o.err_));
  }
  expected& operator=(const expected& o) {
    if (this != &o) {
      destroy();
      has_ = o.has_;
      if (!has_) new (&err_) E(o.err_);
    }
    return *this;
  }
  expected& operator=(expected&& o) noexcept {
    if (this != &o) {
      destroy();
      has_ = o.has_;
      if (!has_) new (&err_) E(std::move(o.err_));
    }
    return *this;
  }
  ~expected() { destroy(); }

  bool has_value() const { return has_; }
  explicit operator bool() const { return has_; }
  void value() const { assert(has_); }
  E& error() & { assert(!has_); return err_; }
  const E& error() const& { assert(!has_); return err_; }
  E&& error() && { assert(!has_); return std::move(err_); }

 private:
  void destroy() {
    if (!has_) err_.~E();
  }
  bool has_;
  union {
    E err_;
  };
};

}  // namespace recur::shim
