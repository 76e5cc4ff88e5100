// The root of the guard tree: reads locals, globals and closure cells from a FrameView and
// checks frame-wide guards (grad mode, no aliasing). Assumes the GIL is held during check().
#include <algorithm>
#include "common/error.h"
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {
namespace {

class GradModeGuard final : public RootGuard {
 public:
  GradModeGuard() : expected_(grad_mode_enabled()) {}
  bool check(const FrameView&) const override { return grad_mode_enabled() == expected_; }
  std::string describe(const FrameView&) const override {
    return std::string("grad mode changed: expected ") + name(expected_) + ", got " +
           name(grad_mode_enabled());
  }
  std::string repr() const override { return std::string("GRAD_MODE ") + name(expected_); }

 private:
  static const char* name(bool enabled) { return enabled ? "enabled" : "disabled"; }
  bool expected_;
};

// Compiled graphs assume their tensor inputs are distinct objects (one graph input each); the
// same tensor passed twice needs a different graph.
class NoAliasingGuard final : public RootGuard {
 public:
  NoAliasingGuard(std::vector<int> indices, std::vector<std::string> sources)
      : indices_(std::move(indices)), sources_(std::move(sources)) {}

  bool check(const FrameView& frame) const override {
    const size_t n = indices_.size();
    if (n <= kPairwiseLimit) {
      for (size_t i = 0; i < n; ++i) {
        PyObject* a = frame.localsplus[indices_[i]];
        if (!a) continue;  // an unbound local fails its own guards; it aliases nothing
        for (size_t j = i + 1; j < n; ++j) {
          if (frame.localsplus[indices_[j]] == a) return false;
        }
      }
      return true;
    }
    std::vector<PyObject*> objs;
    objs.reserve(n);
    for (int index : indices_) {
      if (PyObject* obj = frame.localsplus[index]) objs.push_back(obj);
    }
    std::sort(objs.begin(), objs.end());
    return std::adjacent_find(objs.begin(), objs.end()) == objs.end();
  }

  std::string describe(const FrameView& frame) const override {
    for (size_t i = 0; i < indices_.size(); ++i) {
      PyObject* a = frame.localsplus[indices_[i]];
      if (!a) continue;
      for (size_t j = i + 1; j < indices_.size(); ++j) {
        if (frame.localsplus[indices_[j]] == a) {
          return sources_[i] + " and " + sources_[j] +
                 " are now the same object (compiled for distinct objects)";
        }
      }
    }
    return "";
  }

  std::string repr() const override {
    std::string out = "NO_ALIASING";
    for (const std::string& s : sources_) out += " " + s;
    return out;
  }

 private:
  // Below this many, n^2/2 pointer compares beat sorting a copy.
  static constexpr size_t kPairwiseLimit = 16;
  std::vector<int> indices_;
  std::vector<std::string> sources_;
};

// Two locals that were the same object when traced (one graph input serves both).
class SameObjectGuard final : public RootGuard {
 public:
  SameObjectGuard(ObjectFetcher a, std::string source_a, ObjectFetcher b, std::string source_b)
      : a_(std::move(a)), b_(std::move(b)), source_a_(std::move(source_a)), source_b_(std::move(source_b)) {}
  bool check(const FrameView& frame) const override {
    PyObject* a = a_(frame);
    PyObject* b = b_(frame);
    bool same = a && a == b;
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (PyErr_Occurred()) PyErr_Clear();
    return same;
  }
  std::string describe(const FrameView&) const override {
    return source_a_ + " and " + source_b_ + " are no longer the same object (compiled for one object passed twice)";
  }
  std::string repr() const override { return "SAME_OBJECT " + source_a_ + " " + source_b_; }

 private:
  ObjectFetcher a_, b_;
  std::string source_a_, source_b_;
};

std::string local_source(const std::string& name) { return "L['" + name + "']"; }
std::string global_source(const std::string& name) { return "G['" + name + "']"; }

enum class RootKind { kLocal, kGlobal, kClosure, kFixed };

// How one top-level value is found in the frame, and the manager that guards it.
struct RootEntry {
  RootEntry(RootKind kind, int index, const std::string& name, std::string source)
      : kind(kind), index(index), name(name), manager(std::move(source)) {
    if (kind == RootKind::kGlobal) {
      PyObject* str = PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
      if (!str) throw PythonError();
      PyUnicode_InternInPlace(&str);  // interned and hashed: dict lookups run no Python code
      key = Ref::steal(str);
    }
  }

  // A new reference (a callout further down could drop a global while it is being checked), or
  // NULL without an error set when the value is missing.
  PyObject* get(const FrameView& frame) const {
    switch (kind) {
      case RootKind::kLocal:
        return Py_XNewRef(frame.localsplus[index]);
      case RootKind::kGlobal: {
        PyObject* v = PyDict_GetItemWithError(frame.globals, key.ptr());
        if (!v && !PyErr_Occurred() && frame.builtins) {
          v = PyDict_GetItemWithError(frame.builtins, key.ptr());
        }
        if (!v && PyErr_Occurred()) PyErr_Clear();
        return Py_XNewRef(v);
      }
      case RootKind::kClosure: {
        if (!frame.closure || index >= PyTuple_GET_SIZE(frame.closure)) return nullptr;
        PyObject* cell = PyTuple_GET_ITEM(frame.closure, index);
        return PyCell_Check(cell) ? Py_XNewRef(PyCell_GET(cell)) : nullptr;
      }
      case RootKind::kFixed:
        return Py_NewRef(fixed.ptr());
    }
    return nullptr;
  }

  std::string describe_missing() const {
    switch (kind) {
      case RootKind::kLocal:
        return manager.source() + " is unbound";
      case RootKind::kGlobal:
        return manager.source() + " is missing (no such global or builtin)";
      case RootKind::kClosure:
        return manager.source() + " (a closure variable) is unbound";
      case RootKind::kFixed:
        return manager.source() + " is missing";
    }
    return manager.source() + " is missing";
  }

  RootKind kind;
  int index;
  std::string name;
  Ref key;    // the interned name, for globals
  Ref fixed;  // kFixed: the object itself (a globals dict or closure cell of an inlined function)
  GuardManager manager;
  uint64_t fail_count = 0;
};

// Runs root guards in order, promoting the one that fails.
bool check_root_guards(std::vector<std::unique_ptr<RootGuard>>& guards, const FrameView& frame) {
  for (size_t i = 0; i < guards.size(); ++i) {
    if (!guards[i]->check(frame)) {
      ++guards[i]->fail_count;
      promote_after_failure(guards, i);
      return false;
    }
  }
  return true;
}

std::string root_guards_reason(const std::vector<std::unique_ptr<RootGuard>>& guards,
                               const FrameView& frame) {
  for (const auto& guard : guards) {
    if (!guard->check(frame)) return guard->describe(frame);
  }
  return "";
}

}  // namespace

struct RootGuardManager::Impl {
  // Checked before any value: global state is one compare and fails as a whole.
  std::vector<std::unique_ptr<RootGuard>> state_guards;
  std::vector<std::unique_ptr<RootEntry>> entries;
  // Checked after the values, whose own guards establish that they are what we relate.
  std::vector<std::unique_ptr<RootGuard>> relational_guards;
  int locals_needed = 0;

  GuardManager& entry(RootKind kind, int index, const std::string& name, std::string source) {
    for (auto& e : entries) {
      bool same = e->kind == kind && (kind == RootKind::kGlobal ? e->name == name : e->index == index);
      if (same) return e->manager;
    }
    if (kind == RootKind::kLocal) locals_needed = std::max(locals_needed, index + 1);
    entries.push_back(std::make_unique<RootEntry>(kind, index, name, std::move(source)));
    return entries.back()->manager;
  }
};

RootGuardManager::RootGuardManager() : impl_(std::make_unique<Impl>()) {}
RootGuardManager::~RootGuardManager() = default;

GuardManager& RootGuardManager::local(int index, const std::string& name) {
  if (index < 0) throw InternalError("negative local index");
  return impl_->entry(RootKind::kLocal, index, name, local_source(name));
}

GuardManager& RootGuardManager::global(const std::string& name) {
  return impl_->entry(RootKind::kGlobal, -1, name, global_source(name));
}

GuardManager& RootGuardManager::fixed(Handle object, const std::string& source) {
  Impl& s = *impl_;
  for (auto& e : s.entries)
    if (e->kind == RootKind::kFixed && e->fixed.ptr() == object.ptr()) return e->manager;
  s.entries.push_back(std::make_unique<RootEntry>(RootKind::kFixed, -1, source, source));
  s.entries.back()->fixed = Ref::borrow(object);
  return s.entries.back()->manager;
}

GuardManager& RootGuardManager::closure_cell(int index, const std::string& name) {
  if (index < 0) throw InternalError("negative closure index");
  // Users see a closure variable as a local of the function they wrote.
  return impl_->entry(RootKind::kClosure, index, name, local_source(name));
}

void RootGuardManager::add_grad_mode_guard() {
  impl_->state_guards.push_back(std::make_unique<GradModeGuard>());
}

void RootGuardManager::add_no_aliasing_guard(
    std::vector<std::pair<int, std::string>> local_indices_and_names) {
  std::vector<int> indices;
  std::vector<std::string> sources;
  for (auto& [index, name] : local_indices_and_names) {
    if (index < 0) throw InternalError("negative local index");
    impl_->locals_needed = std::max(impl_->locals_needed, index + 1);
    indices.push_back(index);
    sources.push_back(local_source(name));
  }
  if (indices.size() < 2) return;  // nothing can alias
  impl_->relational_guards.push_back(
      std::make_unique<NoAliasingGuard>(std::move(indices), std::move(sources)));
}

void RootGuardManager::add_same_object_guard(int a, const std::string& name_a, int b, const std::string& name_b) {
  impl_->locals_needed = std::max({impl_->locals_needed, a + 1, b + 1});
  auto local = [](int slot) { return [slot](const FrameView& frame) { return Py_XNewRef(frame.localsplus[slot]); }; };
  impl_->relational_guards.push_back(
      std::make_unique<SameObjectGuard>(local(a), local_source(name_a), local(b), local_source(name_b)));
}

void RootGuardManager::add_same_object_guard(ObjectFetcher a, const std::string& source_a, ObjectFetcher b,
                                             const std::string& source_b) {
  impl_->relational_guards.push_back(std::make_unique<SameObjectGuard>(std::move(a), source_a, std::move(b), source_b));
}

void RootGuardManager::add_shape_guard(std::vector<ObjectFetcher> tensors, std::vector<std::string> sources,
                                       std::vector<ShapeCheck> checks) {
  if (checks.empty()) return;
  impl_->relational_guards.push_back(make_shape_guard(std::move(tensors), std::move(sources), std::move(checks)));
}

bool RootGuardManager::check(const FrameView& frame) {
  Impl& s = *impl_;
  if (!check_root_guards(s.state_guards, frame)) return false;
  const size_t n = s.entries.size();
  for (size_t i = 0; i < n; ++i) {
    RootEntry& e = *s.entries[i];
    PyObject* value = e.get(frame);
    bool ok = value != nullptr && e.manager.check(value);
    Py_XDECREF(value);
    if (!ok) {
      ++e.fail_count;
      promote_after_failure(s.entries, i);
      return false;
    }
  }
  return check_root_guards(s.relational_guards, frame);
}

std::string RootGuardManager::failure_reason(const FrameView& frame) const {
  const Impl& s = *impl_;
  std::string reason = root_guards_reason(s.state_guards, frame);
  if (!reason.empty()) return reason;
  for (const auto& e : s.entries) {
    Ref value = Ref::steal(e->get(frame));
    if (!value) return e->describe_missing();
    reason = e->manager.failure_reason(value.ptr());
    if (!reason.empty()) return reason;
  }
  return root_guards_reason(s.relational_guards, frame);
}

size_t RootGuardManager::size() const {
  const Impl& s = *impl_;
  size_t n = s.state_guards.size() + s.relational_guards.size();
  for (const auto& e : s.entries) n += e->manager.size();
  return n;
}

bool RootGuardManager::expired() const {
  for (const auto& e : impl_->entries)
    if (e->manager.expired()) return true;
  return false;
}

std::string RootGuardManager::dump() const {
  const Impl& s = *impl_;
  std::string out;
  auto dump_guards = [&out](const std::vector<std::unique_ptr<RootGuard>>& guards) {
    for (const auto& g : guards) {
      out += "| " + g->repr() + "  (failed " + std::to_string(g->fail_count) + ")\n";
    }
  };
  dump_guards(s.state_guards);
  for (const auto& e : s.entries) {
    out += "-> (failed " + std::to_string(e->fail_count) + ")\n";
    out += e->manager.dump(2);
  }
  dump_guards(s.relational_guards);
  return out;
}

int RootGuardManager::locals_needed() const { return impl_->locals_needed; }

}  // namespace cdynamo::guards
