// The interpreter's one slot for the state of the layers above the Lisp (the
// stager, the selection, the run file's registries). The Lisp layer names
// none of them: a layer stores its own object under its own type and finds
// it again by that type, so no arrow points up from core/lisp
// (docs/architecture.md).
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace sexpgpu::lisp {

// What the interpreter owns of an extension: something it destroys, after
// its own heap and in the reverse order of creation.
class Extension {
 public:
  virtual ~Extension() = default;
};

// At most one object of each type per interpreter.
class Extensions {
 public:
  Extensions() = default;
  Extensions(const Extensions&) = delete;
  Extensions& operator=(const Extensions&) = delete;
  ~Extensions() {
    while (!slots_.empty()) slots_.pop_back();  // the newest first
  }

  // Makes this interpreter's T from `args`, replacing any earlier one.
  template <class T, class... Args>
  T& emplace(Args&&... args) {
    auto holder = std::make_unique<Holder<T>>(std::forward<Args>(args)...);
    T& value = holder->value;
    for (Slot& s : slots_)
      if (s.key == key<T>()) {
        s.holder = std::move(holder);
        return value;
      }
    slots_.push_back(Slot{key<T>(), std::move(holder)});
    return value;
  }
  // This interpreter's T, or nullptr where no layer made one.
  template <class T>
  T* find() const {
    for (const Slot& s : slots_)
      if (s.key == key<T>()) return &static_cast<Holder<T>&>(*s.holder).value;
    return nullptr;
  }
  // This interpreter's T, which the session has made (session.h).
  template <class T>
  T& get() const {
    return *find<T>();
  }

 private:
  template <class T>
  struct Holder final : Extension {
    template <class... Args>
    explicit Holder(Args&&... args) : value(std::forward<Args>(args)...) {}
    T value;
  };
  // A type's key is the address of its own tag (one per type in the
  // program): a comparison of pointers, no RTTI.
  template <class T>
  static const void* key() {
    static const char tag = 0;
    return &tag;
  }
  struct Slot {
    const void* key;
    std::unique_ptr<Extension> holder;
  };
  std::vector<Slot> slots_;
};

}  // namespace sexpgpu::lisp
