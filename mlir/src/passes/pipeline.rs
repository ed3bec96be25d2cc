//! Textual pass pipelines over a module, as `mlir-opt --pass-pipeline` runs
//! them: every upstream pass and the two Hurray passes.

use crate::context::Mlir;
use crate::error::{Error, Result};
use melior::ir::Module;
use melior::pass::PassManager;

/// Runs `pipeline` (`builtin.module(hurray-export-constants{file=w.hurray})`,
/// upstream passes too) on `module`, which the pass manager verifies after
/// each pass. Errors carry MLIR's diagnostics (a Hurray pass reports its
/// error as one, on the module).
pub fn run_pipeline(mlir: &Mlir, module: &mut Module<'_>, pipeline: &str) -> Result<()> {
    melior::utility::register_all_passes();
    super::register();
    let pm = PassManager::new(mlir.context());
    // Take diagnostics from here on only.
    let _ = mlir.take_diagnostics();
    // `parse_pass_pipeline` wants the pipeline's anchor to be the manager's
    // (`builtin.module`), as mlir-opt does.
    melior::utility::parse_pass_pipeline(pm.as_operation_pass_manager(), pipeline).map_err(
        |e| Error::Pipeline {
            pipeline: pipeline.to_owned(),
            diagnostics: e.to_string(),
        },
    )?;
    pm.run(module).map_err(|_| Error::Pipeline {
        pipeline: pipeline.to_owned(),
        diagnostics: mlir.take_diagnostics(),
    })
}
