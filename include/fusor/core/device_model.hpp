#pragma once
/// @file core/device_model.hpp
/// constexpr descriptions of the machines fusor plans for. Every number cites
/// its source. Users define their own model the same way:
///   struct my_gpu { static constexpr fusor::device_model model = {...}; };
/// and plan with fusor::planning_policy<Rules, true, my_gpu>.
#include <fusor/config.hpp>

namespace fusor {

/// A device as the cost model sees it. Units: bytes, seconds, FLOP/s.
struct device_model {
  const char* name;
  bool gpu;                      ///< false for a CPU (occupancy terms ignored)
  int sm_count;                  ///< streaming multiprocessors (CPU: cores)
  int registers_per_sm;          ///< 32-bit registers per SM
  int max_registers_per_thread;  ///< per-thread register limit
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int shared_memory_per_sm;      ///< bytes
  double l2_bytes;               ///< bytes
  double hbm_bytes_per_s;        ///< peak DRAM bandwidth
  double hbm_efficiency;         ///< fraction of peak a streaming kernel reaches
  double fp32_flops;             ///< peak FP32 (non-tensor) FLOP/s
  double tensor_flops;           ///< peak dense FP16/BF16 tensor-core FLOP/s
  double launch_seconds;         ///< kernel launch overhead on a stream
  double graph_launch_seconds;   ///< per-kernel overhead inside a CUDA graph
  int kernel_param_bytes;        ///< kernel parameter space limit
};

namespace models {

/// NVIDIA H100 SXM5 80 GB. SMs, registers, threads, blocks, shared memory, L2:
/// NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), table 3 and
/// "H100 SM architecture"; bandwidth 3.35 TB/s, FP32 67 TFLOP/s, dense FP16
/// tensor 989 TFLOP/s: H100 datasheet (SXM column). Launch overhead ~3 us on a
/// stream and ~1 us per node in a CUDA graph: typical measurements reported in
/// NVIDIA's "Getting Started with CUDA Graphs" blog (2019). Parameter space
/// 32,764 bytes for Volta and later since CUDA 12.1 (CUDA C++ Programming
/// Guide, "Function Parameters"). Streaming efficiency 0.9: copy kernels
/// reach ~90% of peak HBM bandwidth (a common STREAM result on H100).
struct h100_sxm {
  static constexpr device_model model{"H100 SXM", true, 132, 65536, 255, 2048, 32, 228 * 1024, 50e6,
                                      3.35e12, 0.90, 67e12, 989e12, 3e-6, 1e-6, 32764};
};

/// NVIDIA H200 SXM 141 GB: the H100 SM array (132 SMs, same per-SM limits and
/// peak FLOP/s) with HBM3e at 4.8 TB/s (NVIDIA H200 datasheet, 2024).
struct h200 {
  static constexpr device_model model{"H200", true, 132, 65536, 255, 2048, 32, 228 * 1024, 50e6,
                                      4.8e12, 0.90, 67e12, 989e12, 3e-6, 1e-6, 32764};
};

/// NVIDIA A100 SXM4 80 GB: 108 SMs, 164 KB shared memory per SM, 40 MB L2,
/// 2,039 GB/s, FP32 19.5 TFLOP/s, dense FP16 tensor 312 TFLOP/s (NVIDIA A100
/// Tensor Core GPU Architecture whitepaper, 2020, and A100 datasheet).
struct a100 {
  static constexpr device_model model{"A100 SXM", true, 108, 65536, 255, 2048, 32, 164 * 1024, 40e6,
                                      2.039e12, 0.90, 19.5e12, 312e12, 3e-6, 1e-6, 32764};
};

/// A generic 2-core x86-64 host like fusor's CI machines: ~20 GB/s DRAM
/// bandwidth (a typical 2-channel DDR4 STREAM triad; bench/ measures the real
/// figure), 2 cores x 3 GHz x 16 FP32 FLOP/cycle (AVX2 FMA, 2 x 8 lanes) =
/// 96 GFLOP/s, ~5 us to start an OpenMP parallel region (EPCC OpenMP
/// micro-benchmarks, typical "parallel" overhead on few cores).
struct generic_cpu {
  static constexpr device_model model{"generic CPU", false, 2, 0, 1 << 30, 1, 1, 0, 32e6,
                                      20e9, 0.80, 96e9, 96e9, 5e-6, 5e-6, 1 << 30};
};

}  // namespace models
}  // namespace fusor
