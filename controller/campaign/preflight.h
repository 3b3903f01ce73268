/* Preflight: what a playbook's validation requires of a node's state before its measurements
 * can certify it (validation.preflight in docs/playbooks.md): every HCA port ACTIVE, at the
 * expected rate, every HCA's PCIe link at its maximum generation and width, the expected numbers
 * of HCAs and GPUs. Judged on the facts current when the campaign is created, recorded with the
 * node in the campaign and its report. Pure. */
#ifndef RAILYARD_CONTROLLER_PREFLIGHT_H
#define RAILYARD_CONTROLLER_PREFLIGHT_H

#include <jansson.h>

/* The reasons node facts fail preflight spec ({ports_active, port_rate_gbps, pcie_max, hcas,
 * gpus}; NULL or {}: nothing required), as a new array of strings ("mlx5_3 port 1 is DOWN
 * (phys_state Polling)"); [] when it passes; NULL on allocation failure. */
json_t *cp_preflight(const json_t *spec, const json_t *facts);

/* The facts' PCI device (pci.devices[]) at address, borrowed; NULL when none. */
const json_t *cp_pci_of(const json_t *facts, const char *address);

#endif
