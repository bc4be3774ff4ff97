# Spack recipe of mempath (docs/install.md). Tested without Spack by
# tests/python/test_install.py, which loads this file against a stub of the few
# spack.package names used here and builds with exactly the CMake arguments it returns.
#
# The git URL is a placeholder (the project has no public URL yet): change `git` below
# when the repository is published.

from spack.package import *  # noqa: F401,F403  (Spack 0.x: CMakePackage, CudaPackage too)

try:  # Spack >= 1.0: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:
    pass


class Mempath(CMakePackage, CudaPackage):
    """What every memory path of a GPU node delivers (CPU and GPU bandwidth and latency,
    host<->device copies, unified memory, MPI/NCCL under buffer placement), for Grace
    Hopper (GH200) and x86 + H100/H200 nodes; results in HDF5, ReFrame checks included."""

    homepage = "https://github.com/mempath/mempath"
    git = "https://github.com/mempath/mempath.git"

    version("main", branch="main")
    version("0.2.0", tag="v0.2.0")

    variant("mpi", default=True, description="Build mempath-mpi (node-to-node MPI bandwidth)")
    variant("nccl", default=False, description="Build the nccl command of mempath-mpi")

    # NCCL is driven from mempath-mpi, on GPU buffers.
    conflicts("~cuda", when="+nccl", msg="+nccl needs +cuda")
    conflicts("~mpi", when="+nccl", msg="+nccl needs +mpi (the nccl command is part of mempath-mpi)")
    # CMake's default architectures (80;90) are not Spack's to choose: ask for one.
    conflicts("cuda_arch=none", when="+cuda", msg="+cuda needs cuda_arch, e.g. cuda_arch=90 for H100/GH200")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.20:", type="build")
    # The serial C API only (one HDF5 file per process); ~mpi keeps +mpi's MPI out of ~mpi builds.
    depends_on("hdf5~mpi")
    depends_on("numactl")
    depends_on("cuda", when="+cuda")
    depends_on("mpi", when="+mpi")
    depends_on("nccl", when="+nccl")

    def cmake_args(self):
        spec = self.spec
        # REQUIRE_*: a variant asked for is built or the configure fails with one line,
        # never a quiet build without it (src/CMakeLists.txt).
        args = [
            self.define_from_variant("MEMPATH_WITH_CUDA", "cuda"),
            self.define_from_variant("MEMPATH_REQUIRE_CUDA", "cuda"),
            self.define_from_variant("MEMPATH_WITH_MPI", "mpi"),
            self.define_from_variant("MEMPATH_REQUIRE_MPI", "mpi"),
            self.define_from_variant("MEMPATH_WITH_NCCL", "nccl"),
            self.define_from_variant("MEMPATH_REQUIRE_NCCL", "nccl"),
            self.define("MEMPATH_TESTS", False),
            # Sources from a Spack stage are no git checkout: record the version built.
            self.define("MEMPATH_GIT_REVISION", str(spec.version)),
        ]
        if spec.satisfies("+cuda"):
            # Spack's nvcc, not whichever one is first on PATH.
            args.append(self.define("CMAKE_CUDA_COMPILER", join_path(spec["cuda"].prefix, "bin", "nvcc")))
            archs = [a for a in spec.variants["cuda_arch"].value if a != "none"]
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        return args
