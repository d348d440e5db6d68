/* ListTensorDesc and TensorDesc read the addresses of a list's tensors from global memory: device addresses,
 * which a kernel run on the CPU reaches only through the block runner's map of device memory, and the runner
 * does not hand that map to kernels yet. A kernel including this header stops at build time, saying so. */
#ifndef ACL_EMU_KERNEL_OPERATOR_LIST_TENSOR_INTF_H
#define ACL_EMU_KERNEL_OPERATOR_LIST_TENSOR_INTF_H
#error "ListTensorDesc and TensorDesc (kernel_operator_list_tensor_intf.h) are not emulated: a tensor list holds device addresses in global memory, which kernels run on the CPU cannot follow yet"
#endif
