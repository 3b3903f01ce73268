/* Compile-time check of cuda.h's declarations against the CUDA toolkit's header, built only when
 * the toolkit is found (RAILYARD_HAVE_CUDA): the constants we pass and the sizes of the types we
 * spell ourselves must be the driver's (compared as int: the enums differ in type). Nothing
 * here runs. */
#include "nodeagent/bench/cuda.h"

#include <cuda.h>

_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "CUdeviceptr is 64 bits");
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult is an int");
_Static_assert(sizeof(CUdevice) == sizeof(int), "CUdevice is an int");
_Static_assert(sizeof(CUuuid) == 16, "CUuuid is 16 bytes");
_Static_assert((int)BCU_SUCCESS == (int)CUDA_SUCCESS, "CUDA_SUCCESS");
_Static_assert((int)BCU_ERROR_INVALID_VALUE == (int)CUDA_ERROR_INVALID_VALUE, "INVALID_VALUE");
_Static_assert((int)BCU_ERROR_OUT_OF_MEMORY == (int)CUDA_ERROR_OUT_OF_MEMORY, "OUT_OF_MEMORY");
_Static_assert((int)BCU_ERROR_NOT_INITIALIZED == (int)CUDA_ERROR_NOT_INITIALIZED,
	       "NOT_INITIALIZED");
_Static_assert((int)BCU_ERROR_NO_DEVICE == (int)CUDA_ERROR_NO_DEVICE, "NO_DEVICE");
_Static_assert((int)BCU_ERROR_INVALID_DEVICE == (int)CUDA_ERROR_INVALID_DEVICE, "INVALID_DEVICE");
_Static_assert((int)BCU_ERROR_NOT_SUPPORTED == (int)CUDA_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED");
_Static_assert((int)BCU_ATTR_PCI_BUS_ID == (int)CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "PCI_BUS_ID");
_Static_assert((int)BCU_ATTR_GPU_DIRECT_RDMA_SUPPORTED ==
		       (int)CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
	       "GPU_DIRECT_RDMA_SUPPORTED");
_Static_assert((int)BCU_ATTR_DMA_BUF_SUPPORTED == (int)CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
	       "DMA_BUF_SUPPORTED");
_Static_assert((int)BCU_POINTER_ATTRIBUTE_SYNC_MEMOPS == (int)CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
	       "SYNC_MEMOPS");
_Static_assert((int)BCU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ==
		       (int)CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
	       "DMA_BUF_FD");
_Static_assert((int)BCU_MEMHOSTALLOC_PORTABLE == (int)CU_MEMHOSTALLOC_PORTABLE,
	       "MEMHOSTALLOC_PORTABLE");
_Static_assert((int)BCU_STREAM_NON_BLOCKING == (int)CU_STREAM_NON_BLOCKING, "STREAM_NON_BLOCKING");
_Static_assert((int)BCU_EVENT_DEFAULT == (int)CU_EVENT_DEFAULT, "EVENT_DEFAULT");
_Static_assert((int)BCU_EVENT_BLOCKING_SYNC == (int)CU_EVENT_BLOCKING_SYNC, "EVENT_BLOCKING_SYNC");
