// The sgfabric executable's global operator new and delete (linked into the executable only, not
// into the installed library: a library must not replace its host program's allocator).
//
// Small-object allocation for the whole process.
//
// SimGrid allocates and frees a few small objects per simcall (the activity, its kernel action,
// std::function state): millions per second of simulated work, where glibc's malloc spent about
// a sixth of a large replay's CPU (its bins and consolidation; its per-thread cache holds only 7
// blocks per size). These replacements of the global operator new and delete keep freed blocks
// of up to 512 bytes on per-size free lists, carved from 256 KiB chunks that are never returned;
// larger blocks go to malloc. Each block carries a 16-byte header with its size class, so the
// unsized delete knows where the block goes. Nothing depends on addresses, so results are the
// same. Left out under AddressSanitizer, whose own new/delete find the memory errors.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SGF_NO_SMALL_ALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SGF_NO_SMALL_ALLOC 1
#endif

#ifndef SGF_NO_SMALL_ALLOC
#include <cstdlib>
#include <new>

namespace
{
constexpr std::size_t kHeader = 16; // keeps the default new alignment (16)
constexpr std::size_t kGrain = 16;
constexpr std::size_t kMaxSmall = 512;
constexpr std::size_t kClasses = kMaxSmall / kGrain; // class c holds payloads of up to (c + 1) x 16 bytes
constexpr std::size_t kLarge = kClasses;             // header value of a malloc'ed block
constexpr std::size_t kChunk = 256 * 1024;

struct FreeBlock {
  FreeBlock *next;
};

struct Pools {
  FreeBlock *free[kClasses];
  char *bump, *bump_end;
};

thread_local Pools pools; // zero-initialised: usable before main

void *small_alloc(std::size_t size) noexcept
{
  if (size == 0)
    size = 1;
  if (size > kMaxSmall) {
    char *base = static_cast<char *>(std::malloc(size + kHeader));
    if (base == nullptr)
      return nullptr;
    *reinterpret_cast<std::size_t *>(base) = kLarge;
    return base + kHeader;
  }
  std::size_t c = (size - 1) / kGrain;
  Pools &p = pools;
  char *base;
  if (p.free[c] != nullptr) {
    base = reinterpret_cast<char *>(p.free[c]);
    p.free[c] = p.free[c]->next;
  } else {
    std::size_t block = kHeader + (c + 1) * kGrain;
    if (p.bump == nullptr || static_cast<std::size_t>(p.bump_end - p.bump) < block) {
      // The rest of the previous chunk, if any, is left unused (at most 528 bytes).
      p.bump = static_cast<char *>(std::malloc(kChunk));
      if (p.bump == nullptr)
        return nullptr;
      p.bump_end = p.bump + kChunk;
    }
    base = p.bump;
    p.bump += block;
  }
  *reinterpret_cast<std::size_t *>(base) = c;
  return base + kHeader;
}

void small_free(void *ptr) noexcept
{
  if (ptr == nullptr)
    return;
  char *base = static_cast<char *>(ptr) - kHeader;
  std::size_t c = *reinterpret_cast<std::size_t *>(base);
  if (c >= kLarge) {
    std::free(base);
    return;
  }
  FreeBlock *b = reinterpret_cast<FreeBlock *>(base);
  b->next = pools.free[c];
  pools.free[c] = b;
}

void *new_or_throw(std::size_t size)
{
  for (;;) {
    void *p = small_alloc(size);
    if (p != nullptr)
      return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr)
      throw std::bad_alloc();
    handler();
  }
}
} // namespace

// Never inlined: a tool that replaces the global new and delete (valgrind) must see every call,
// or a block from its new would come back to small_free, which reads a header it does not have.
#define SGF_ALLOC_FN __attribute__((noinline))
SGF_ALLOC_FN void *operator new(std::size_t size) { return new_or_throw(size); }
SGF_ALLOC_FN void *operator new[](std::size_t size) { return new_or_throw(size); }
SGF_ALLOC_FN void *operator new(std::size_t size, const std::nothrow_t &) noexcept { return small_alloc(size); }
SGF_ALLOC_FN void *operator new[](std::size_t size, const std::nothrow_t &) noexcept { return small_alloc(size); }
SGF_ALLOC_FN void operator delete(void *ptr) noexcept { small_free(ptr); }
SGF_ALLOC_FN void operator delete[](void *ptr) noexcept { small_free(ptr); }
SGF_ALLOC_FN void operator delete(void *ptr, std::size_t) noexcept { small_free(ptr); }
SGF_ALLOC_FN void operator delete[](void *ptr, std::size_t) noexcept { small_free(ptr); }
SGF_ALLOC_FN void operator delete(void *ptr, const std::nothrow_t &) noexcept { small_free(ptr); }
SGF_ALLOC_FN void operator delete[](void *ptr, const std::nothrow_t &) noexcept { small_free(ptr); }
#endif
