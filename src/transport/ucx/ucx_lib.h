// UCX, loaded when the transport is first set up, not linked: libucp's
// memory hooks, installed as soon as it is loaded, change mremap and
// friends in the whole process (UCX 1.13 breaks mremap with
// MREMAP_FIXED), which a process that never uses UCX must not suffer.
// shi_ucx_lib holds the functions the transport calls; below, each of
// their names stands for its pointer, so the transport's code reads as
// plain UCX.
#ifndef SHI_UCX_LIB_H
#define SHI_UCX_LIB_H

#include <stdio.h>

#include <ucp/api/ucp.h>

#define SHI_UCX_FUNCS(X)                                                      \
    X(ucp_config_read)                                                        \
    X(ucp_config_release)                                                     \
    X(ucp_init_version)                                                       \
    X(ucp_cleanup)                                                            \
    X(ucp_worker_create)                                                      \
    X(ucp_worker_destroy)                                                     \
    X(ucp_worker_get_efd)                                                     \
    X(ucp_worker_arm)                                                         \
    X(ucp_worker_signal)                                                      \
    X(ucp_worker_progress)                                                    \
    X(ucp_worker_get_address)                                                 \
    X(ucp_worker_release_address)                                             \
    X(ucp_ep_create)                                                          \
    X(ucp_ep_close_nbx)                                                       \
    X(ucp_ep_print_info)                                                      \
    X(ucp_request_free)                                                       \
    X(ucp_request_cancel)                                                     \
    X(ucp_request_check_status)                                               \
    X(ucp_tag_send_nbx)                                                       \
    X(ucp_tag_recv_nbx)                                                       \
    X(ucp_tag_probe_nb)                                                       \
    X(ucp_tag_msg_recv_nbx)                                                   \
    X(ucp_mem_map)                                                            \
    X(ucp_mem_unmap)                                                          \
    X(ucp_rkey_pack)                                                          \
    X(ucp_rkey_buffer_release)                                                \
    X(ucs_status_string)

struct shi_ucx_lib {
#define SHI_UCX_POINTER(f) __typeof__(&f) f;
    SHI_UCX_FUNCS(SHI_UCX_POINTER)
#undef SHI_UCX_POINTER
};
extern struct shi_ucx_lib shi_ucx_lib;

// Loads libucp once per process. SHOAL_OK, or SHOAL_ENOTSUP with the
// loader's reason in the error text.
int shi_ucx_lib_load(void);

#ifndef SHI_UCX_LIB_LOADER
#define ucp_config_read            (shi_ucx_lib.ucp_config_read)
#define ucp_config_release         (shi_ucx_lib.ucp_config_release)
#define ucp_init_version           (shi_ucx_lib.ucp_init_version)
#define ucp_cleanup                (shi_ucx_lib.ucp_cleanup)
#define ucp_worker_create          (shi_ucx_lib.ucp_worker_create)
#define ucp_worker_destroy         (shi_ucx_lib.ucp_worker_destroy)
#define ucp_worker_get_efd         (shi_ucx_lib.ucp_worker_get_efd)
#define ucp_worker_arm             (shi_ucx_lib.ucp_worker_arm)
#define ucp_worker_signal          (shi_ucx_lib.ucp_worker_signal)
#define ucp_worker_progress        (shi_ucx_lib.ucp_worker_progress)
#define ucp_worker_get_address     (shi_ucx_lib.ucp_worker_get_address)
#define ucp_worker_release_address (shi_ucx_lib.ucp_worker_release_address)
#define ucp_ep_create              (shi_ucx_lib.ucp_ep_create)
#define ucp_ep_close_nbx           (shi_ucx_lib.ucp_ep_close_nbx)
#define ucp_ep_print_info          (shi_ucx_lib.ucp_ep_print_info)
#define ucp_request_free           (shi_ucx_lib.ucp_request_free)
#define ucp_request_cancel         (shi_ucx_lib.ucp_request_cancel)
#define ucp_request_check_status   (shi_ucx_lib.ucp_request_check_status)
#define ucp_tag_send_nbx           (shi_ucx_lib.ucp_tag_send_nbx)
#define ucp_tag_recv_nbx           (shi_ucx_lib.ucp_tag_recv_nbx)
#define ucp_tag_probe_nb           (shi_ucx_lib.ucp_tag_probe_nb)
#define ucp_tag_msg_recv_nbx       (shi_ucx_lib.ucp_tag_msg_recv_nbx)
#define ucp_mem_map                (shi_ucx_lib.ucp_mem_map)
#define ucp_mem_unmap              (shi_ucx_lib.ucp_mem_unmap)
#define ucp_rkey_pack              (shi_ucx_lib.ucp_rkey_pack)
#define ucp_rkey_buffer_release    (shi_ucx_lib.ucp_rkey_buffer_release)
#define ucs_status_string          (shi_ucx_lib.ucs_status_string)
#endif

#endif
