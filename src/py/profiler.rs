//! The profiler's and anomaly mode's switches and results, for
//! `rgrad.autograd.profiler`, `rgrad.profiler` and `rgrad.autograd.anomaly_mode`.

use crate::autograd::anomaly;
use crate::profiler::{self, Config, Recording, Scope};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::borrow::Cow;
use std::sync::Arc;

/// Starts the process's profiling session (torch: one at a time).
#[pyfunction]
#[pyo3(signature = (record_shapes=false, profile_memory=false, with_flops=false, with_stack=false))]
fn _profiler_start(
    record_shapes: bool,
    profile_memory: bool,
    with_flops: bool,
    with_stack: bool,
) -> PyResult<()> {
    profiler::start(Config {
        record_shapes,
        profile_memory,
        with_flops,
        with_stack,
    })?;
    Ok(())
}

/// Ends the session and returns what it recorded.
#[pyfunction]
fn _profiler_stop(py: Python<'_>) -> PyResult<PyRecording> {
    // (gathering and sorting a long session's events needs no Python: the GIL is let go)
    let r = super::gil::detach(py, profiler::stop)?;
    Ok(PyRecording { r: Arc::new(r) })
}

/// Whether a profiling session is on.
#[pyfunction]
fn _profiler_enabled() -> bool {
    profiler::is_active()
}

/// Opens a user range (`record_function`) on this thread; False when no session is on
/// (then there is nothing to close).
#[pyfunction]
fn _record_function_enter(name: String) -> bool {
    match profiler::begin(Cow::Owned(name), Scope::UserScope, Vec::new) {
        Some(range) => {
            // closed by `_record_function_exit` on this thread (a `with` block's exit)
            std::mem::forget(range);
            true
        }
        None => false,
    }
}

/// Closes the innermost range `_record_function_enter` opened on this thread.
#[pyfunction]
fn _record_function_exit() {
    profiler::end();
}

/// One session's result (`_profiler_stop`).
#[pyclass(name = "_ProfilerRecording", module = "rgrad._C", frozen)]
pub struct PyRecording {
    r: Arc<Recording>,
}

fn shapes_list<'py>(py: Python<'py>, s: Option<&[Box<[usize]>]>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s {
        None => py.None().into_bound(py),
        Some(s) => PyList::new(py, s.iter().map(|d| d.to_vec()))?.into_any(),
    })
}

#[pymethods]
impl PyRecording {
    /// The events, ordered by start: `(id, parent_id, name, thread, start_ns, end_ns,
    /// seq_nr, fwd_thread, scope, input_shapes, stack, flops)`.
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for e in &self.r.events {
            let t = (
                e.id,
                e.parent,
                e.full_name(),
                e.thread,
                e.start,
                e.end,
                e.seq,
                e.fwd_thread,
                e.scope as u8,
                shapes_list(py, e.shapes())?,
                e.stack().map(|s| s.entries()),
                e.flops(),
            );
            out.append(t.into_pyobject(py)?)?;
        }
        Ok(out)
    }
    /// The allocations and frees: `(ts_ns, nbytes, thread)`, in time order.
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.r.memory.iter().map(|m| (m.at, m.bytes, m.thread)))
    }
    /// Number of events.
    fn __len__(&self) -> usize {
        self.r.events.len()
    }
    /// key_averages' rows, keys in order of first appearance (the row format of
    /// `profiler_util.averages_from_rows`): `(key, count, cpu_time_total_us,
    /// self_cpu_time_total_us, cpu_memory_usage, self_cpu_memory_usage, flops,
    /// is_user_annotation, scope, input_shapes, stack, parent)`.
    #[pyo3(signature = (group_by_input_shape=false))]
    fn averages<'py>(
        &self,
        py: Python<'py>,
        group_by_input_shape: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let r = &self.r;
        for a in super::gil::detach(py, || r.averages(group_by_input_shape)) {
            let t = PyTuple::new(
                py,
                [
                    a.key.into_pyobject(py)?.into_any(),
                    a.count.into_pyobject(py)?.into_any(),
                    a.total_us.into_pyobject(py)?.into_any(),
                    a.self_us.into_pyobject(py)?.into_any(),
                    a.memory.into_pyobject(py)?.into_any(),
                    a.self_memory.into_pyobject(py)?.into_any(),
                    a.flops.into_pyobject(py)?.into_any(),
                    pyo3::types::PyBool::new(py, a.user).to_owned().into_any(),
                    a.scope.into_pyobject(py)?.into_any(),
                    shapes_list(py, a.shapes.as_deref())?,
                    PyList::empty(py).into_any(),
                    a.parent.into_pyobject(py)?.into_any(),
                ],
            )?;
            out.append(t)?;
        }
        Ok(out)
    }
    /// The options the session ran with: `(record_shapes, profile_memory, with_flops,
    /// with_stack)`.
    fn config(&self) -> (bool, bool, bool, bool) {
        let c = self.r.config;
        (
            c.record_shapes,
            c.profile_memory,
            c.with_flops,
            c.with_stack,
        )
    }
}

// ---- emit_nvtx ----------------------------------------------------------------------------

/// Turns NVTX ranges per op on or off (`emit_nvtx`).
#[pyfunction]
#[pyo3(signature = (enabled, record_shapes=false))]
fn _nvtx_enable(enabled: bool, record_shapes: bool) {
    profiler::nvtx::set_enabled(enabled, record_shapes);
}

/// A sink that keeps the ranges (`_nvtx_capture`).
#[derive(Default)]
struct Capture(parking_lot::Mutex<Vec<String>>);

impl profiler::nvtx::Sink for Capture {
    fn push(&self, message: &str) {
        self.0.lock().push(format!("push {message}"));
    }
    fn pop(&self) {
        self.0.lock().push("pop".into());
    }
}

static CAPTURE_SINK: parking_lot::Mutex<Option<Arc<Capture>>> = parking_lot::Mutex::new(None);

/// For tests (no NVTX library is needed): `True` sends the ranges to a list instead of
/// NVTX; `False` stops and returns that list (`"push <text>"` / `"pop"` entries).
#[pyfunction]
fn _nvtx_capture(on: bool) -> Vec<String> {
    let mut slot = CAPTURE_SINK.lock();
    if on {
        let c = Arc::new(Capture::default());
        profiler::nvtx::set_sink(Some(c.clone()));
        *slot = Some(c);
        Vec::new()
    } else {
        profiler::nvtx::set_sink(None);
        slot.take()
            .map(|c| std::mem::take(&mut *c.0.lock()))
            .unwrap_or_default()
    }
}

// ---- anomaly mode ------------------------------------------------------------------------

#[pyfunction]
#[pyo3(signature = (enabled, check_nan=true))]
fn _set_anomaly_enabled(enabled: bool, check_nan: bool) {
    anomaly::set(enabled, check_nan);
}

#[pyfunction]
fn is_anomaly_enabled() -> bool {
    anomaly::is_enabled()
}

#[pyfunction]
fn is_anomaly_check_nan_enabled() -> bool {
    anomaly::is_check_nan_enabled()
}

#[pyfunction]
fn _set_anomaly_check_inf(on: bool) {
    anomaly::set_check_inf(on);
}

#[pyfunction]
fn _is_anomaly_check_inf_enabled() -> bool {
    anomaly::is_check_inf_enabled()
}

/// The Python stack where a node was made: each frame's code object and line,
/// innermost first; formatted only when an error is reported.
struct PyTraceback {
    /// (code object, the frame's last instruction offset `f_lasti`): the line is looked
    /// up only when the traceback is formatted
    frames: Vec<(Py<PyAny>, i32)>,
}

impl anomaly::Traceback for PyTraceback {
    fn format(&self) -> Vec<String> {
        super::gil::attach(|py| format_frames(py, &lines(py, &self.frames)).unwrap_or_default())
    }
    fn entries(&self) -> Vec<String> {
        super::gil::attach(|py| stack_entries(py, &lines(py, &self.frames)).unwrap_or_default())
    }
}

/// Each frame's line, from its code object's line table (`co_lines`) and `f_lasti`.
fn lines(py: Python<'_>, frames: &[(Py<PyAny>, i32)]) -> Vec<(Py<PyAny>, i32)> {
    let line_of = |code: &Bound<'_, PyAny>, lasti: i32| -> PyResult<i32> {
        let mut line = code.getattr("co_firstlineno")?.extract::<i32>()?;
        for entry in code.call_method0("co_lines")?.try_iter()? {
            let (start, end, l): (i32, i32, Option<i32>) = entry?.extract()?;
            if start <= lasti && lasti < end {
                if let Some(l) = l {
                    line = l;
                }
                break;
            }
        }
        Ok(line)
    };
    frames
        .iter()
        .map(|(code, lasti)| {
            let line = line_of(code.bind(py), *lasti).unwrap_or(0);
            (code.clone_ref(py), line)
        })
        .collect()
}

/// The directory of rgrad's own Python code, whose frames tracebacks leave out (torch's
/// are C++ there).
fn package_dir(py: Python<'_>) -> PyResult<String> {
    let package = py
        .import("rgrad")?
        .getattr("__file__")?
        .extract::<String>()?;
    Ok(std::path::Path::new(&package)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default())
}

/// The profiler's stack entries, innermost first: `file(line): function`, file names as
/// torch shortens them (relative to the `sys.path` entry they are under).
fn stack_entries(py: Python<'_>, frames: &[(Py<PyAny>, i32)]) -> PyResult<Vec<String>> {
    let own = package_dir(py)?;
    let roots: Vec<String> = py.import("sys")?.getattr("path")?.extract()?;
    let mut out = Vec::new();
    for (code, line) in frames {
        let code = code.bind(py);
        let file: String = code.getattr("co_filename")?.extract()?;
        if !own.is_empty() && file.starts_with(&own) {
            continue;
        }
        let short = roots
            .iter()
            .filter(|r| !r.is_empty())
            .filter_map(|r| file.strip_prefix(r.as_str())?.strip_prefix('/'))
            .min_by_key(|rest| rest.len())
            .unwrap_or(&file);
        let name: String = code.getattr("co_name")?.extract()?;
        out.push(format!("{short}({line}): {name}"));
    }
    Ok(out)
}

/// torch's `traceback.format_list(traceback.extract_stack())` of the frames, outermost
/// first, leaving out rgrad's own Python code (torch's frames are C++ there).
fn format_frames(py: Python<'_>, frames: &[(Py<PyAny>, i32)]) -> PyResult<Vec<String>> {
    let linecache = py.import("linecache")?;
    let package_dir = package_dir(py)?;
    let mut out = Vec::new();
    for (code, line) in frames.iter().rev() {
        let code = code.bind(py);
        let file: String = code.getattr("co_filename")?.extract()?;
        if !package_dir.is_empty() && file.starts_with(&package_dir) {
            continue;
        }
        let name: String = code.getattr("co_name")?.extract()?;
        let mut s = format!("  File \"{file}\", line {line}, in {name}\n");
        let text: String = linecache
            .call_method1("getline", (&file, *line))?
            .extract()?;
        let text = text.trim();
        if !text.is_empty() {
            s.push_str(&format!("    {text}\n"));
        }
        out.push(s);
    }
    Ok(out)
}

unsafe extern "C" {
    /// CPython's (3.9 and later, every version the abi3 wheel runs on): the calling frame
    /// as a new reference, or null. Not in the limited API's headers, but exported by
    /// every interpreter; the `f_back` attribute would cost a lookup per frame.
    fn PyFrame_GetBack(frame: *mut pyo3::ffi::PyFrameObject) -> *mut pyo3::ffi::PyFrameObject;
    /// CPython's (3.11 and later): the frame's `f_lasti`, the byte offset of its last
    /// instruction (cheap, where the line number walks the code's line table).
    fn PyFrame_GetLasti(frame: *mut pyo3::ffi::PyFrameObject) -> std::ffi::c_int;
}

/// The capture anomaly mode runs as each node is made: only on a thread that holds the
/// GIL (a backward worker making a double-backward node records its parent instead).
fn capture() -> Option<Arc<dyn anomaly::Traceback>> {
    if !super::gil::holds_gil() {
        return None;
    }
    // SAFETY: this thread holds the GIL (checked above).
    let py = unsafe { Python::assume_attached() };
    let mut frames = Vec::new();
    // SAFETY: with the GIL held, PyEval_GetFrame returns a borrowed reference to the
    // current frame (or null), valid while the frame runs, which it does during this
    // call; we take our own reference before walking on.
    let frame = unsafe { pyo3::ffi::PyEval_GetFrame() };
    if frame.is_null() {
        return None;
    }
    // SAFETY: `frame` is a live frame object (above); we own a new reference to it.
    let mut frame: Bound<'_, PyAny> =
        unsafe { Bound::from_borrowed_ptr(py, frame.cast::<pyo3::ffi::PyObject>()) };
    loop {
        let f = frame.as_ptr().cast::<pyo3::ffi::PyFrameObject>();
        // SAFETY: `f` is a live frame (we hold a reference); GetCode and GetBack return
        // new references (GetBack: null for the outermost frame), GetLasti an int.
        let (code, lasti, back) = unsafe {
            let code = pyo3::ffi::PyFrame_GetCode(f);
            (
                Bound::<PyAny>::from_owned_ptr(py, code.cast::<pyo3::ffi::PyObject>()).unbind(),
                PyFrame_GetLasti(f),
                PyFrame_GetBack(f),
            )
        };
        frames.push((code, lasti));
        if back.is_null() {
            break;
        }
        // SAFETY: a new reference to a live frame (above).
        frame = unsafe { Bound::from_owned_ptr(py, back.cast::<pyo3::ffi::PyObject>()) };
    }
    Some(Arc::new(PyTraceback { frames }))
}

/// Warns as torch does before an error of a backward node under anomaly mode is raised
/// (a warnings filter that turns the warning into an error makes it the one raised).
pub(crate) fn warn_anomaly(py: Python<'_>, e: &anomaly::AnomalyError) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for text in e.warnings() {
        let c = std::ffi::CString::new(text.replace('\0', "")).unwrap_or_default();
        PyErr::warn(py, &category, &c, 1)?;
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    anomaly::set_capture(capture);
    m.add_class::<PyRecording>()?;
    m.add_function(wrap_pyfunction!(_profiler_start, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function_enter, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function_exit, m)?)?;
    m.add_function(wrap_pyfunction!(_nvtx_enable, m)?)?;
    m.add_function(wrap_pyfunction!(_nvtx_capture, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_check_inf, m)?)?;
    m.add_function(wrap_pyfunction!(_is_anomaly_check_inf_enabled, m)?)?;
    Ok(())
}
