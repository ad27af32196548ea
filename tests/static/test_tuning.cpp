// Tuning values keyed by the device model (issue 16, item 7;
// kernels/tuning/*.hpp): the values the kernels use, how they follow a
// model, and a user's specialization for a model of their own.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

namespace {
// A made-up GPU with 16 SMs, and a GEMM tile chosen for it by a user.
struct small_gpu {
  static constexpr fusor::device_model model{"small GPU", true, 16, 65536, 255, 2048, 32, 100 * 1024, 4e6,
                                             0.5e12, 0.9, 10e12, 100e12, 3e-6, 1e-6, 32764};
};
}  // namespace

template <>
struct fusor::kernels::gemm_tuning_for<small_gpu> {
  static constexpr fusor::kernels::gemm_tuning value{32, 32, 16, 2, 2, 32};
};

TEST_CASE("kernels are tuned for the fused policy's model unless FUSOR_TUNED_MODEL says otherwise", "[static][tuning]") {
  namespace k = fusor::kernels;
  STATIC_REQUIRE(std::is_same_v<k::tuned_model, fusor::models::h100_sxm>);
  STATIC_REQUIRE(std::is_same_v<k::tuned_model, fusor::fused_policy::model_type>);
}

TEST_CASE("the values the kernels use come from the tuning structs", "[static][tuning]") {
  namespace k = fusor::kernels;
  // GEMM: 64 x 64 x 16 block tile, 4 x 4 per thread: 256 threads, the row
  // family's block (the norm prologue shares it).
  STATIC_REQUIRE(k::gemm_bm == 64);
  STATIC_REQUIRE(k::gemm_bn == 64);
  STATIC_REQUIRE(k::gemm_bk == 16);
  STATIC_REQUIRE(k::gemm_threads == 256);
  STATIC_REQUIRE(k::gemm_threads == k::reduce_block);
  STATIC_REQUIRE(k::gemm_tc_bk == 32);
  // Attention: 64 query rows x 4 lanes, 32 keys per tile, head_dim <= 128.
  STATIC_REQUIRE(k::attn_threads == 256);
  STATIC_REQUIRE(k::attn_keys == 32);
  STATIC_REQUIRE(k::attn_max_dim == 128);
  STATIC_REQUIRE(k::attn_per_lane == 32);
  // Rows: a warp for rows up to 1024, 256-thread blocks, split rows aiming
  // at 1024 blocks on H100's 132 SMs.
  STATIC_REQUIRE(k::warp_row_max == 1024);
  STATIC_REQUIRE(k::reduce_target_blocks == 1024);
  STATIC_REQUIRE(k::reduce_chunk_min == (fusor::index_t(1) << 14));
  // One output per thread: 256 threads.
  STATIC_REQUIRE(k::elementwise_threads == 256);
  // Host GEMM engine: 256 x 512 blocks, GEMV up to 4 rows.
  STATIC_REQUIRE(fusor::exec::host_gemm_mc == 256);
  STATIC_REQUIRE(fusor::exec::host_gemm_nc == 512);
  STATIC_REQUIRE(fusor::exec::host_gemv_max_rows == 4);
}

TEST_CASE("tuning values follow the device model they are keyed by", "[static][tuning]") {
  namespace k = fusor::kernels;
  // The split target: the largest power of two within 8 blocks per SM.
  STATIC_REQUIRE(k::row_tuning_for<fusor::models::h100_sxm>::value.target_blocks == 1024);
  STATIC_REQUIRE(k::row_tuning_for<fusor::models::h200>::value.target_blocks == 1024);
  STATIC_REQUIRE(k::row_tuning_for<fusor::models::a100>::value.target_blocks == 512);
  STATIC_REQUIRE(k::row_tuning_for<small_gpu>::value.target_blocks == 128);
  // A user's specialization replaces the primary for their model only.
  STATIC_REQUIRE(k::gemm_tuning_for<small_gpu>::value.threads() == 256);
  STATIC_REQUIRE(k::gemm_tuning_for<small_gpu>::value.bm == 32);
  STATIC_REQUIRE(k::gemm_tuning_for<fusor::models::a100>::value.bm == 64);
  // Grid of a grid-stride launch: one thread per item, capped per SM.
  STATIC_REQUIRE(k::grid_stride_blocks(1) == 1);
  STATIC_REQUIRE(k::grid_stride_blocks(257) == 2);
  STATIC_REQUIRE(k::grid_stride_blocks(fusor::index_t(1) << 40) == (fusor::index_t(1) << 20));
  STATIC_REQUIRE(k::grid_stride_blocks(fusor::index_t(1) << 30, 132) == 132 * 32);
}
