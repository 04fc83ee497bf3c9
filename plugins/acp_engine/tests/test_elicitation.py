"""An ACP form's schema reaches the host whole (issue 28 item 10): the
bounds and formats the broker checks an answer against."""

from __future__ import annotations

import json

from agy_host.contract.interactions import FormField, Question
from agy_host_acp.elicitation import decode, question_for


def test_bounds_and_formats_reach_the_form_and_a_wrong_typed_bound_is_dropped() -> None:
    params = {
        "sessionId": "s1",
        "mode": "form",
        "message": "Deploy?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
                "name": {"type": "string", "minLength": 2, "maxLength": 8, "format": "email", "pattern": "^x"},
                "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"enum": ["a", "b"]}},
                "odd": {"type": "number", "minimum": "low", "maximum": True},
                "count": {"type": "string", "minLength": -1, "maxLength": 2.5},
            },
            "required": ["replicas"],
        },
    }
    decoded = decode(json.dumps(params).encode())
    assert not isinstance(decoded, str)
    question = question_for(decoded, "s")
    assert isinstance(question, Question)
    assert question.fields == [
        FormField(name="replicas", type="integer", required=True, minimum=1.0, maximum=5.0),
        FormField(name="name", min_length=2, max_length=8, format="email"),
        FormField(name="tags", type="array", choices=["a", "b"], min_items=1, max_items=2),
        FormField(name="odd", type="number"),
        FormField(name="count"),
    ]
