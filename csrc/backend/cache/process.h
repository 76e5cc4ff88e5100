// Running the compiler: spawn a process, send its stdout and stderr to a file, wait for it.
// Assumes a POSIX system; safe to call from several threads at once and without the GIL.
#pragma once
#include <string>
#include <vector>

namespace cdynamo::cache {

// Runs argv[0] (searched in PATH) with argv; the child's stdout and stderr go to output_path.
// Returns the exit status, or -1 when the process could not be started (reason in *error).
int run_process(const std::vector<std::string>& argv, const std::string& output_path, std::string* error);

// The whole content of a file ("" if it cannot be read).
std::string read_file(const std::string& path);
// Writes content to path atomically: a unique temporary file in the same folder, then rename,
// so concurrent readers and writers (threads or processes) never see a partial file.
void write_file_atomic(const std::string& path, const std::string& content);
// Creates path and its parents (like mkdir -p); throws UserError naming the path on failure.
void make_dirs(const std::string& path);
bool file_exists(const std::string& path);
// A name unique to this process and call, for temporary files: ".tmp.<pid>.<n>".
std::string unique_suffix();

}  // namespace cdynamo::cache
