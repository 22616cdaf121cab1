//! CPU lists ("0-3,8") and CPU masks ("ff,00000000") as the kernel writes
//! them: [`detpath_sys::cpu::CpuList`], re-exported; its parse errors become
//! `TuneError::InvalidCoreList` (in error.rs, which imports this module, not
//! the other way round).

pub use detpath_sys::cpu::{CpuList, CpuListError};
