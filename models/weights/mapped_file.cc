#include "models/weights/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <ATen/ATen.h>

#include "core/error.h"

namespace slapo::models {

MappedFile::~MappedFile() {
  if (base != nullptr) munmap(base, size);
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SLAPO_CHECK(fd >= 0, ErrorCode::kNotFound, path, ": cannot open the weights (",
              std::strerror(errno), ")");
  struct stat st {};
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  auto file = std::make_shared<MappedFile>();
  int map_errno = 0;
  if (regular && st.st_size > 0) {
    void* p =
        mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    map_errno = errno;
    if (p != MAP_FAILED) {
      file->base = p;
      file->size = static_cast<size_t>(st.st_size);
    }
  }
  ::close(fd);
  SLAPO_CHECK(regular, ErrorCode::kInvalidArgument, path, ": not a regular file where ", what,
              " were expected");
  SLAPO_CHECK(st.st_size == 0 || file->base != nullptr, ErrorCode::kInvalidArgument, path,
              ": cannot map the weights (", std::strerror(map_errno), ")");
  return file;
}

at::Tensor MappedFile::view(const std::shared_ptr<MappedFile>& file, size_t offset,
                            at::IntArrayRef shape, at::ScalarType dtype) {
  return at::from_blob(
      static_cast<char*>(file->base) + offset, shape, [file](void*) {},
      at::TensorOptions().dtype(dtype));
}

}  // namespace slapo::models
