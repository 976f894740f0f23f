// A read-only memory map of a whole file. The bytes are page cache (RssFile), never
// anonymous memory; moving the object moves ownership of the mapping. copy_of() makes one
// from bytes already in memory (heap, exactly `size` bytes: under AddressSanitizer a read
// past the end is caught, which a page-rounded mapping hides), for parsers fed by fuzzers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace edge {

class MappedFile {
 public:
  static Expected<MappedFile> open(const std::string& path);
  // A copy of [data, data + size) named `name` (what path() returns, for messages).
  static MappedFile copy_of(std::string name, const void* data, size_t size);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // True when [offset, offset+len) lies inside the file (overflow-safe).
  bool contains(uint64_t offset, uint64_t len) const {
    return offset <= size_ && len <= size_ - offset;
  }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  std::unique_ptr<uint8_t[]> owned_;  // copy_of(): data_ points here and nothing is mapped
};

// Reads a whole (small) file into a string: config.json, tokenizer.json, index files.
Expected<std::string> read_text_file(const std::string& path);
// Writes bytes to path atomically enough for our use (write to path.tmp, rename).
Status write_file(const std::string& path, const void* data, size_t size);

}  // namespace edge
