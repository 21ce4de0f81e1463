/*
 * p3d_symbol.h - offline symbolization of return addresses recorded by
 * the shim: a pc is mapped to its loaded object with the trace's
 * P3D_REC_MODULE records (path, base, size), and, when that file is
 * readable here, to function+offset through its ELF symbol table
 * (.symtab, else .dynsym) read directly: no addr2line or other tool.
 * C++ names are shown mangled (no demangler is linked).
 *
 * Not thread-safe (a per-process cache of parsed files); call from the
 * report thread only.
 */
#ifndef P3D_SYMBOL_H
#define P3D_SYMBOL_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_format.h"

/*
 * Write "func+0xOFF (file)" or, when the file cannot be read,
 * "file+0xOFF [not symbolized: file not readable here]", or
 * "0xPC [no module]" into buf.
 */
void p3d_symbol_pc(char *buf, size_t n, uint64_t pc,
                   const struct p3d_rec_module *const *mods, size_t n_mods);

/*
 * Start of the traced run (CLOCK_REALTIME ns): a module file modified
 * after it is flagged "[file modified after the run]" (its symbols may
 * not match the recorded addresses).  0 = do not check.
 */
void p3d_symbol_run_start(uint64_t realtime_ns);

/* Free the cache. */
void p3d_symbol_free(void);

#endif /* P3D_SYMBOL_H */
