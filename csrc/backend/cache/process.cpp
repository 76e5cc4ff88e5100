// Child processes and files for the kernel cache: posix_spawn + waitpid, atomic writes, mkdir -p.
// Assumes POSIX; posix_spawn (vfork-like in glibc) keeps spawning cheap from a large process.
#include "backend/cache/process.h"
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include "common/error.h"

extern char** environ;

namespace cdynamo::cache {

int run_process(const std::vector<std::string>& argv, const std::string& output_path, std::string* error) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (error) *error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      if (error) *error = std::string("waitpid failed: ") + std::strerror(errno);
      return -1;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (error) *error = argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string unique_suffix() {
  static std::atomic<long> counter{0};
  return ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = path + unique_suffix();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw UserError("cdynamo cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw UserError("cdynamo cannot create " + path + ": " + reason);
  }
}

void make_dirs(const std::string& path) {
  std::string partial;
  for (size_t pos = 0; pos != std::string::npos;) {
    size_t next = path.find('/', pos + 1);
    partial = path.substr(0, next);
    if (!partial.empty() && mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw UserError("cdynamo cannot create the cache folder " + partial + ": " + std::strerror(errno));
    pos = next;
  }
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace cdynamo::cache
