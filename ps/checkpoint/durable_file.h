// Putting a checkpoint file in place so that a crash at any moment leaves either the old file or
// the new one, never half of one: write a temporary file (fsync'ed by its writer), rename it over
// the final name, then fsync the directory so the rename itself survives a power loss.
#pragma once

#include <string>

#include "common/status.h"

namespace poseidon::ps {

// Creates `dir` when missing (and makes its entry durable in the parent).
Status makeDirectory(const std::string& dir);
// Creates `dir` when missing and proves a file can be created in it (and removed), so a directory
// a job cannot write is found at start, not at the first checkpoint; the error names it and why.
Status checkWritableDirectory(const std::string& dir);
// fsync of a directory: without it a rename (or a new entry) may still be only in memory.
Status syncDirectory(const std::string& dir);
// Renames `temp` (complete and fsync'ed) to `path` in `dir` and syncs `dir`; on failure removes
// `temp` and leaves whatever `path` held before.
Status replaceFile(const std::string& temp, const std::string& path, const std::string& dir);

}  // namespace poseidon::ps
