// The DLPack data-interchange structs, as much of them as shoal reads.
//
// DLPack (github.com/dmlc/dlpack) fixes these layouts as a stable ABI, so a
// consumer may declare them itself instead of vendoring the header. Only
// the fields and enum values used here are named.
#ifndef SHOAL_EXT_DLPACK_H
#define SHOAL_EXT_DLPACK_H

#include <stdint.h>

// Device types (DLDeviceType): memory the CPU can address directly.
enum {
    EXT_DL_CPU         = 1,
    EXT_DL_CUDA_HOST   = 3, // pinned host memory
    EXT_DL_CUDA_MANAGE = 13, // unified memory, not accepted (may migrate)
};

// Type codes (DLDataTypeCode).
enum {
    EXT_DL_INT     = 0,
    EXT_DL_UINT    = 1,
    EXT_DL_FLOAT   = 2,
    EXT_DL_BFLOAT  = 4,
    EXT_DL_COMPLEX = 5,
    EXT_DL_BOOL    = 6,
};

// Flags of the versioned struct.
#define EXT_DL_FLAG_READ_ONLY 1u

typedef struct {
    int32_t device_type;
    int32_t device_id;
} ext_dl_device;

typedef struct {
    uint8_t  code;
    uint8_t  bits;
    uint16_t lanes;
} ext_dl_dtype;

typedef struct {
    void         *data;
    ext_dl_device device;
    int32_t       ndim;
    ext_dl_dtype  dtype;
    int64_t      *shape;
    int64_t      *strides; // in elements; NULL means compact row-major
    uint64_t      byte_offset;
} ext_dl_tensor;

// Capsule "dltensor" (DLPack before 1.0).
typedef struct ext_dl_managed {
    ext_dl_tensor dl_tensor;
    void         *manager_ctx;
    void (*deleter)(struct ext_dl_managed *self);
} ext_dl_managed;

// Capsule "dltensor_versioned" (DLPack 1.0 and later).
typedef struct ext_dl_managed_v {
    uint32_t version_major;
    uint32_t version_minor;
    void    *manager_ctx;
    void (*deleter)(struct ext_dl_managed_v *self);
    uint64_t      flags;
    ext_dl_tensor dl_tensor;
} ext_dl_managed_v;

#endif // SHOAL_EXT_DLPACK_H
