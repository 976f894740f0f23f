// write_file_atomically: stdio into path.tmp, fclose, rename; the temp file removed on error.
#include "core/atomic_file.h"

#include <cerrno>
#include <cstring>

namespace edge {

Status write_file_atomically(const std::string& path, const FileBody& body) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::io_error(tmp + ": " + std::strerror(errno));
  Status st = body(f);
  const bool closed = std::fclose(f) == 0;
  if (st.ok() && !closed) st = Status::io_error("close failed");
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    st = Status::io_error(std::string("rename: ") + std::strerror(errno));
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st.with_context(path);
  }
  return {};
}

}  // namespace edge
