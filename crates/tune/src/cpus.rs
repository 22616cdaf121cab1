//! CPU lists ("0-3,8") and CPU masks ("ff,00000000") as the kernel writes
//! them: [`detpath_sys::cpu::CpuList`], re-exported; its parse errors become
//! [`TuneError::InvalidCoreList`].

pub use detpath_sys::cpu::{CpuList, CpuListError};

use crate::error::TuneError;

impl From<CpuListError> for TuneError {
    fn from(e: CpuListError) -> Self {
        TuneError::InvalidCoreList { input: e.input, reason: e.reason }
    }
}
