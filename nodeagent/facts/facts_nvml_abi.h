/* The part of NVML's C ABI (nvml.h of the NVIDIA driver, stable across driver branches) that the
 * GPU facts use, declared here because the agent builds without nvml.h and never links
 * libnvidia-ml: types, constants and one function type per entry point resolved with dlsym().
 * Also compiled into the tests' double of libnvidia-ml.so.1, so both agree on every signature. */
#ifndef RAILYARD_FACTS_NVML_ABI_H
#define RAILYARD_FACTS_NVML_ABI_H

/* nvmlReturn_t: the codes the collector tells apart (values from nvml.h). */
typedef int nvmlReturn_t;
#define NVML_SUCCESS			   0
#define NVML_ERROR_UNINITIALIZED	   1
#define NVML_ERROR_INVALID_ARGUMENT	   2
#define NVML_ERROR_NOT_SUPPORTED	   3
#define NVML_ERROR_NO_PERMISSION	   4
#define NVML_ERROR_NOT_FOUND		   6
#define NVML_ERROR_INSUFFICIENT_SIZE	   7
#define NVML_ERROR_DRIVER_NOT_LOADED	   9
#define NVML_ERROR_TIMEOUT		   10
#define NVML_ERROR_LIBRARY_NOT_FOUND	   12
#define NVML_ERROR_FUNCTION_NOT_FOUND	   13
#define NVML_ERROR_CORRUPTED_INFOROM	   14
#define NVML_ERROR_GPU_IS_LOST		   15
#define NVML_ERROR_RESET_REQUIRED	   16
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH 18
#define NVML_ERROR_MEMORY		   20
#define NVML_ERROR_UNKNOWN		   999

typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvmlEnableState_t */
typedef int nvmlEnableState_t;
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED  1

/* nvmlMemoryErrorType_t, nvmlEccCounterType_t */
#define NVML_MEMORY_ERROR_TYPE_CORRECTED   0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC		   0
#define NVML_AGGREGATE_ECC		   1

/* Buffer sizes nvml.h guarantees to be large enough. */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE	       96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE	       96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE	       30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE  32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16

/* Links nvmlDeviceGetNvLinkState() takes (Hopper has 18). */
#define NVML_NVLINK_MAX_LINKS 18

/* nvmlNvLinkErrorCounter_t of nvmlDeviceGetNvLinkErrorCounter() (the data-link layer's counters).
 */
#define NVML_NVLINK_ERROR_DL_REPLAY   0
#define NVML_NVLINK_ERROR_DL_RECOVERY 1
#define NVML_NVLINK_ERROR_DL_CRC_FLIT 2
#define NVML_NVLINK_ERROR_DL_CRC_DATA 3

/* nvmlGpuFabricInfo_t (version 1) of nvmlDeviceGetGpuFabricInfo(): a GPU's registration with
 * the NVSwitch fabric (Hopper and later). status is meaningful only in state COMPLETED. */
typedef unsigned char nvmlGpuFabricState_t;
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED   1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS   2
#define NVML_GPU_FABRIC_STATE_COMPLETED	    3
#define NVML_GPU_FABRIC_UUID_LEN	    16

typedef struct nvmlGpuFabricInfo_st {
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

/* nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3() fills it. */
typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:17:00.0" */
} nvmlPciInfo_t;

/* nvmlMemory_t (version 1) of nvmlDeviceGetMemoryInfo(). */
typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

/* nvmlClocksEventReason* bits of nvmlDeviceGetCurrentClocksEventReasons() (the same bits as the
 * older nvmlClocksThrottleReason*). */
#define NVML_CLOCKS_EVENT_GPU_IDLE	      0x0000000000000001ULL
#define NVML_CLOCKS_EVENT_APPLICATIONS_CLOCKS 0x0000000000000002ULL
#define NVML_CLOCKS_EVENT_SW_POWER_CAP	      0x0000000000000004ULL
#define NVML_CLOCKS_EVENT_HW_SLOWDOWN	      0x0000000000000008ULL
#define NVML_CLOCKS_EVENT_SYNC_BOOST	      0x0000000000000010ULL
#define NVML_CLOCKS_EVENT_SW_THERMAL	      0x0000000000000020ULL
#define NVML_CLOCKS_EVENT_HW_THERMAL	      0x0000000000000040ULL
#define NVML_CLOCKS_EVENT_HW_POWER_BRAKE      0x0000000000000080ULL
#define NVML_CLOCKS_EVENT_DISPLAY_CLOCKS      0x0000000000000100ULL

/* Entry points, one function type each; the names are the symbols dlsym() looks up. */
typedef nvmlReturn_t nvml_fn_void(void);
typedef const char *nvml_fn_error_string(nvmlReturn_t result);
typedef nvmlReturn_t nvml_fn_sys_string(char *buf, unsigned int length);
typedef nvmlReturn_t nvml_fn_sys_int(int *value);
typedef nvmlReturn_t nvml_fn_count(unsigned int *count);
typedef nvmlReturn_t nvml_fn_handle(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t nvml_fn_dev_string(nvmlDevice_t device, char *buf, unsigned int length);
typedef nvmlReturn_t nvml_fn_dev_uint(nvmlDevice_t device, unsigned int *value);
typedef nvmlReturn_t nvml_fn_dev_ull(nvmlDevice_t device, unsigned long long *value);
typedef nvmlReturn_t nvml_fn_dev_state(nvmlDevice_t device, nvmlEnableState_t *state);
typedef nvmlReturn_t nvml_fn_dev_states(nvmlDevice_t device, nvmlEnableState_t *current,
					nvmlEnableState_t *pending);
typedef nvmlReturn_t nvml_fn_dev_uints(nvmlDevice_t device, unsigned int *current,
				       unsigned int *pending);
typedef nvmlReturn_t nvml_fn_pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci);
typedef nvmlReturn_t nvml_fn_memory(nvmlDevice_t device, nvmlMemory_t *memory);
typedef nvmlReturn_t nvml_fn_ecc_errors(nvmlDevice_t device, int error_type, int counter_type,
					unsigned long long *count);
typedef nvmlReturn_t nvml_fn_remapped_rows(nvmlDevice_t device, unsigned int *corr,
					   unsigned int *unc, unsigned int *pending,
					   unsigned int *failure);
typedef nvmlReturn_t nvml_fn_nvlink_state(nvmlDevice_t device, unsigned int link,
					  nvmlEnableState_t *active);
typedef nvmlReturn_t nvml_fn_fabric_info(nvmlDevice_t device, nvmlGpuFabricInfo_t *info);
typedef nvmlReturn_t nvml_fn_nvlink_error(nvmlDevice_t device, unsigned int link, int counter,
					  unsigned long long *value);

#endif
