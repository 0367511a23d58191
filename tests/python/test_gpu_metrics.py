"""GPU metrics over time (profile --gpu-metrics) in Python: `t.gpu_metrics` is
the series as one table, each sample with its metric's name, label and unit.
The rows are written here through the real format (SBTWriter), as the capture
writes them: GpuMetric rows naming per-process metric ids, samples by id."""

import numpy as np
import pytest

import tracesmith


def _write_metric_trace(path):
    strings = np.array(["", "sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SM active",
                        "%", "pcie__read_bytes.sum.per_second", "PCIe read", "bytes/s"],
                       dtype=object)
    desc = tracesmith.Table("gpumetricdesc", {
        "metric_id": np.array([1, 2], np.uint32), "pid": np.array([7, 7], np.uint32),
        "name_id": np.array([1, 4], np.uint32), "label_id": np.array([2, 5], np.uint32),
        "unit_id": np.array([3, 6], np.uint32)}, strings)
    starts = np.arange(1000, 2000, 100, dtype=np.uint64)
    n = len(starts)
    samples = tracesmith.Table("gpumetric", {
        "start_ns": np.concatenate([starts, starts]),
        "end_ns": np.concatenate([starts + 100, starts + 100]),
        "value": np.concatenate([np.full(n, 87.5), np.full(n, 2.5e9)]),
        "pid": np.full(2 * n, 7, np.uint32), "device_id": np.full(2 * n, 1, np.uint32),
        "metric_id": np.concatenate([np.full(n, 1, np.uint32), np.full(n, 2, np.uint32)])},
        strings)
    with tracesmith.SBTWriter(path) as w:
        w.write_table(desc)
        w.write_table(samples)
    return n


def test_series_as_one_table_with_names_and_units(tmp_path):
    out = tmp_path / "metrics.sbt"
    n = _write_metric_trace(out)
    t = tracesmith.load(out)
    assert len(t.gpu_metric_samples) == 2 * n
    assert len(t.gpu_metric_names) == 2
    g = t.gpu_metrics
    assert len(g) == 2 * n
    assert set(g.label) == {"SM active", "PCIe read"}
    sm = g[g.label == "SM active"]
    assert (sm.value == 87.5).all() and (sm.unit == "%").all()
    assert sm.name[0] == "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
    assert (sm.device_id == 1).all() and (sm.duration_ns == 100).all()
    pcie = g[g.label == "PCIe read"]
    assert pcie.value[0] == 2.5e9 and pcie.unit[0] == "bytes/s"


def test_series_to_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    out = tmp_path / "metrics.sbt"
    n = _write_metric_trace(out)
    df = tracesmith.load(out).gpu_metrics.to_pandas()
    wide = df.pivot_table(index="start_ns", columns="label", values="value")
    assert list(wide.columns) == ["PCIe read", "SM active"] and len(wide) == n
    assert isinstance(df["unit"].dtype, pd.CategoricalDtype)


def test_a_trace_without_metrics_has_an_empty_series(mlp):
    g = tracesmith.load(mlp).gpu_metrics
    assert len(g) == 0 and "label" in g
