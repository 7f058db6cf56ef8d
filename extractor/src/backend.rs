//! The codegen backend, wrapped so that extraction runs *after* the crate's
//! codegen instead of before it.
//!
//! Extracting in `after_analysis` put the whole extraction on the critical
//! path of a cargo build twice over: before the crate's metadata is written
//! (cargo starts the crates that depend on it as soon as their `.rmeta`
//! exists, so every dependent waited for the extraction), and before any
//! LLVM work started. Once `codegen_crate` returns, the metadata is written
//! and every codegen unit is handed to LLVM's worker threads; the main thread
//! only waits for them (`join_codegen`). The extraction runs in that wait.
//!
//! Every method forwards to the real backend (the one rustc would have
//! chosen), so the objects are the same bytes; `codegen_crate` then runs the
//! extraction. Its errors (`KANALYZE_STRICT`) still fail the build: the
//! linker aborts on errors after joining the codegen, before linking.

use std::any::Any;

use rustc_codegen_ssa::traits::CodegenBackend;
use rustc_codegen_ssa::{CompiledModules, CrateInfo, TargetConfig};
use rustc_data_structures::fx::FxIndexMap;
use rustc_metadata::EncodedMetadata;
use rustc_metadata::creader::MetadataLoaderDyn;
use rustc_middle::dep_graph::{WorkProduct, WorkProductId};
use rustc_middle::ty::TyCtxt;
use rustc_middle::util::Providers;
use rustc_session::config::{CrateType, OutputFilenames, PrintRequest};
use rustc_session::{EarlyDiagCtxt, Session};
use rustc_span::Symbol;

/// What runs once the crate's codegen units are with LLVM: the driver's
/// extraction (a function, so that this module does not depend on the
/// driver that builds it).
pub type AfterCodegen = Box<dyn for<'tcx> Fn(TyCtxt<'tcx>) + Send + Sync>;

/// The backend rustc would have used, with the extraction after codegen.
pub struct ExtractingBackend {
    inner: Box<dyn CodegenBackend>,
    after_codegen: AfterCodegen,
}

impl ExtractingBackend {
    /// Loads the backend exactly as rustc does without a custom one
    /// (`-Zcodegen-backend`, the target's default, else the built-in one).
    pub fn new(sess: &Session, after_codegen: AfterCodegen) -> Self {
        let early_dcx = EarlyDiagCtxt::new(sess.opts.error_format);
        let inner = rustc_interface::util::get_codegen_backend(
            &early_dcx,
            &sess.opts.sysroot,
            sess.opts.unstable_opts.codegen_backend.as_deref(),
            &sess.target,
        );
        ExtractingBackend {
            inner,
            after_codegen,
        }
    }
}

impl CodegenBackend for ExtractingBackend {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn init(&self, sess: &Session) {
        self.inner.init(sess)
    }

    fn print(&self, req: &PrintRequest, out: &mut String, sess: &Session) {
        self.inner.print(req, out, sess)
    }

    fn target_config(&self, sess: &Session) -> TargetConfig {
        self.inner.target_config(sess)
    }

    fn supported_crate_types(&self, sess: &Session) -> Vec<CrateType> {
        self.inner.supported_crate_types(sess)
    }

    fn print_passes(&self) {
        self.inner.print_passes()
    }

    fn print_version(&self) {
        self.inner.print_version()
    }

    fn replaced_intrinsics(&self) -> Vec<Symbol> {
        self.inner.replaced_intrinsics()
    }

    fn thin_lto_supported(&self) -> bool {
        self.inner.thin_lto_supported()
    }

    fn has_zstd(&self) -> bool {
        self.inner.has_zstd()
    }

    fn has_mnemonic(&self, sess: &Session, mnemonic: &str) -> bool {
        self.inner.has_mnemonic(sess, mnemonic)
    }

    fn metadata_loader(&self) -> Box<MetadataLoaderDyn> {
        self.inner.metadata_loader()
    }

    fn provide(&self, providers: &mut Providers) {
        self.inner.provide(providers)
    }

    fn target_cpu(&self, sess: &Session) -> String {
        self.inner.target_cpu(sess)
    }

    fn codegen_crate<'tcx>(&self, tcx: TyCtxt<'tcx>) -> Box<dyn Any> {
        let ongoing = self.inner.codegen_crate(tcx);
        (self.after_codegen)(tcx);
        ongoing
    }

    fn join_codegen(
        &self,
        ongoing_codegen: Box<dyn Any>,
        sess: &Session,
        outputs: &OutputFilenames,
        crate_info: &CrateInfo,
    ) -> (CompiledModules, FxIndexMap<WorkProductId, WorkProduct>) {
        self.inner
            .join_codegen(ongoing_codegen, sess, outputs, crate_info)
    }

    fn print_pass_timings(&self) {
        self.inner.print_pass_timings()
    }

    fn print_statistics(&self) {
        self.inner.print_statistics()
    }

    fn print_statistics_json(&self) -> String {
        self.inner.print_statistics_json()
    }

    fn link(
        &self,
        sess: &Session,
        compiled_modules: CompiledModules,
        crate_info: CrateInfo,
        metadata: EncodedMetadata,
        outputs: &OutputFilenames,
    ) {
        self.inner
            .link(sess, compiled_modules, crate_info, metadata, outputs)
    }
}
