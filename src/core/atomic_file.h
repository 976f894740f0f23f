// "Write to a temp file, then rename": a file is written as path + ".tmp" and renamed over
// path only once every byte is out and the file is closed, so a reader never sees a half
// written file and a failed write leaves no partial file behind (nor replaces an old one).
// The model writers (GGUF, safetensors) and write_file() go through it.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "core/status.h"

namespace edge {

// Writes the temp file's contents; a failure stops the write.
using FileBody = std::function<Status(std::FILE* f)>;

// Opens path + ".tmp", runs `body` on it, closes it and renames it to `path`. Any error
// after the temp file is open removes it and comes back prefixed with `path`; a temp file
// that cannot be opened is reported by its own name.
Status write_file_atomically(const std::string& path, const FileBody& body);

}  // namespace edge
