"""Reader.lineage()'s ``dataset_graph``: structured fields (issue 24, item 12),
and still the dict it was before."""

from __future__ import annotations

import json
import pickle

import pytest
from google.protobuf import json_format

from summarylog import Reader, SummaryRecord
from summarylog.pb import ms
from summarylog.read_dataset_graph import DatasetGraph, flat_parameters

# Batch <- Map (two transforms) <- MnistDataset (with a sampler), as MindSpore's
# SummaryCollector packs mindspore.dataset.serialize()'s dict
GRAPH = {
    "parameter": {"mapStr": {"op_type": "Batch", "pad_info": "None"},
                  "mapInt": {"batch_size": 32}, "mapBool": {"drop_remainder": True}},
    "children": [{
        "parameter": {"mapStr": {"op_type": "Map"},
                      "mapStrList": {"input_columns": {"strValue": ["image", ""]}}},
        "operations": [
            {"operationParam": {"mapStr": {"tensor_op_name": "Resize"},
                                "mapDouble": {"scale": 0.5}}, "size": [32, 32]},
            {"operationParam": {"mapStr": {"tensor_op_name": "RandomChoice"}},
             "weights": [0.25, 0.75]}],
        "children": [{
            "parameter": {"mapStr": {"op_type": "MnistDataset", "dataset_dir": "/data/mnist"},
                          "mapInt": {"num_parallel_workers": 8}},
            "sampler": {"operationParam": {"mapStr": {"sampler_name": "RandomSampler"},
                                           "mapBool": {"replacement": False},
                                           "mapInt": {"num_samples": 100}}}}]}]}

# MindInsight 2.3.1's organize_graph() of the same record (its data lineage),
# checked by hand in its venv; it differs in one place: MindInsight also lists
# Resize's size under "weights" (its list is not reset between the two keys)
MINDINSIGHT = {
    "op_type": "Batch", "batch_size": 32, "drop_remainder": True, "pad_info": None,
    "children": [{
        "op_type": "Map", "input_columns": ["image", None],
        "operations": [{"tensor_op_name": "Resize", "scale": 0.5, "size": [32, 32]},
                       {"tensor_op_name": "RandomChoice", "weights": [0.25, 0.75]}],
        "children": [{
            "op_type": "MnistDataset", "dataset_dir": "/data/mnist", "num_parallel_workers": 8,
            "sampler": {"sampler_name": "RandomSampler", "replacement": False,
                        "num_samples": 100},
            "children": []}]}]}


@pytest.fixture
def row(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("dataset_graph", "train_dataset", GRAPH)
        rec.add_value("train_lineage", "t", {
            "train_dataset": {"train_dataset_path": "/data/mnist", "train_dataset_size": 600},
            "hyper_parameters": {"batch_size": 32}})
        rec.record(0)
    (row,) = Reader(tmp_path).lineage()
    return row


def test_structured_fields(row):
    g = row["dataset_graph"]
    assert isinstance(g, DatasetGraph)
    assert [n.op_type for n in g.walk()] == ["Batch", "Map", "MnistDataset"]
    assert g.params == {"op_type": "Batch", "batch_size": 32, "drop_remainder": True,
                        "pad_info": None}
    (m,) = g.children
    assert m.op_type == "Map" and m.params["input_columns"] == ["image", None]
    assert m.operations == [{"tensor_op_name": "Resize", "scale": 0.5, "size": [32, 32]},
                            {"tensor_op_name": "RandomChoice", "weights": [0.25, 0.75]}]
    src = g.find("MnistDataset")
    assert src is m.children[0] and src.children == []
    assert src.sampler == {"sampler_name": "RandomSampler", "replacement": False,
                           "num_samples": 100}
    assert g.sampler is None and g.operations == []
    # the dataset's path and batch size, as MindInsight's lineage shows them (its size is
    # not in the graph: the row's train_dataset_size)
    assert (g.path, g.batch_size) == ("/data/mnist", 32)
    assert (row["train_dataset_path"], row["train_dataset_size"], row["batch_size"]) == (
        "/data/mnist", 600, 32)
    assert g.as_mindinsight() == MINDINSIGHT
    assert repr(g) == "<DatasetGraph Batch <- Map <- MnistDataset>"


def test_still_the_dict_it_was(row):
    """Backward compatible: the record's fields (MessageToDict of the proto),
    compared equal, indexed, JSON-dumped and pickled as before."""
    before = json_format.MessageToDict(json_format.ParseDict(GRAPH, ms.DatasetGraph()))
    g = row["dataset_graph"]
    assert g == before and before == g
    assert g["children"][0]["parameter"]["mapStr"]["op_type"] == "Map"
    assert json.loads(json.dumps(g)) == before
    back = pickle.loads(pickle.dumps(g))
    assert back == before and back.batch_size == 32


@pytest.mark.parametrize("fields", [
    {},
    {"operations": [{"size": [1]}]},
    {"parameter": {"mapStr": "x", "mapInt": [1]}, "children": "no", "operations": 3},
    {"parameter": {"mapStrList": {"k": {"strValue": "notalist"}}}, "sampler": []},
    {"children": [1, {"parameter": {"mapInt": {"batch_size": True}}}]},
])
def test_odd_graphs_give_empty_fields_not_errors(fields):
    g = DatasetGraph.of(fields)
    assert g == fields
    assert [n.op_type for n in g.walk()][:1] == [None]
    assert g.path is None and g.batch_size is None
    g.as_mindinsight()
    repr(g)


def test_deep_graph_from_a_file(tmp_path):
    """A 90-stage pipeline (protobuf's nesting limit is 100): walked without recursion."""
    node: dict = {"parameter": {"mapStr": {"op_type": "MnistDataset", "dataset_dir": "/d"}}}
    for _ in range(89):
        node = {"parameter": {"mapStr": {"op_type": "Map"}}, "children": [node]}
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("dataset_graph", "x", node)
        rec.record(0)
    (row,) = Reader(tmp_path).lineage()
    g = row["dataset_graph"]
    assert len(list(g.walk())) == 90 and g.path == "/d"


def test_flat_parameters_of_junk():
    assert flat_parameters(None) == {} and flat_parameters([1]) == {}
    assert flat_parameters({"mapStr": {"a": "None", "b": "x"}}) == {"a": None, "b": "x"}
