// RecordView: the read-only, random-access sequence through which analyses read a
// CompactTrace's GPU ops and API calls. Records are handed out by value, never by
// reference: what lies behind the view is the trace's to choose (an array today; packed
// records, PackedLanes in packed_lanes.h, are what holding 100 M kernels in 2 GB needs,
// #41 item 6), and no analysis may keep a pointer into it. `Store` has size() and
// operator[](size_t) returning a record (std::vector, PackedLanes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <utility>

namespace tracesmith::analysis {

template <typename Store>
class RecordView {
 public:
  using T = std::remove_cvref_t<decltype(std::declval<const Store&>()[0])>;
  // A random-access iterator whose reference type is the record itself (a prvalue):
  // it models std::random_access_iterator, so std::ranges algorithms take it.
  class Iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // legacy: reference is not T&
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = T;
    using pointer = void;

    Iterator() = default;
    Iterator(const Store* records, size_t i) : records_(records), i_(i) {}
    T operator*() const { return (*records_)[i_]; }
    T operator[](difference_type n) const { return (*records_)[i_ + n]; }
    Iterator& operator++() { return ++i_, *this; }
    Iterator operator++(int) { return {records_, i_++}; }
    Iterator& operator--() { return --i_, *this; }
    Iterator operator--(int) { return {records_, i_--}; }
    Iterator& operator+=(difference_type n) { return i_ += n, *this; }
    Iterator& operator-=(difference_type n) { return i_ -= n, *this; }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) {
      return difference_type(a.i_) - difference_type(b.i_);
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const Iterator& a, const Iterator& b) { return a.i_ <=> b.i_; }
    // The record's index in the view.
    size_t index() const { return i_; }

   private:
    // The trace's records, not the view: an iterator outlives the view it came from.
    const Store* records_ = nullptr;
    size_t i_ = 0;
  };

  explicit RecordView(const Store& records) : records_(&records) {}

  size_t size() const { return records_->size(); }
  bool empty() const { return records_->size() == 0; }
  T operator[](size_t i) const { return (*records_)[i]; }
  T front() const { return (*records_)[0]; }
  T back() const { return (*records_)[records_->size() - 1]; }
  Iterator begin() const { return {records_, 0}; }
  Iterator end() const { return {records_, size()}; }

 private:
  const Store* records_;
};

}  // namespace tracesmith::analysis
