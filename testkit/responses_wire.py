"""OpenAI's Responses API as the scripted server streams it, every event an instance of the
official `openai` SDK's own types (`openai.types.responses`) serialised with
`model_dump_json`: the shapes are the SDK's, not ours. Also the compact endpoint's answer
(`CompactedResponse`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from openai import BaseModel
from openai.types.responses import (
    CompactedResponse,
    Response,
    ResponseCompactionItem,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseIncompleteEvent,
    ResponseInProgressEvent,
    ResponseOutputItem,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningSummaryTextDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response import IncompleteDetails
from openai.types.responses.response_reasoning_item import Summary
from openai.types.responses.response_reasoning_summary_part_added_event import Part as AddedPart
from openai.types.responses.response_reasoning_summary_part_done_event import Part as DonePart
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from testkit.script import Compacted, NoUsage, Reply, Step, Text, Thinking, ToolCallStep, Usage
from testkit.wire import OpenAIWire


def _split(text: str, chunks: int) -> list[str]:
    n = max(1, min(chunks, len(text)))
    return [text[i * len(text) // n : (i + 1) * len(text) // n] for i in range(n)]


def sse(event: BaseModel) -> bytes:
    kind = getattr(event, "type", "message")
    return f"event: {kind}\ndata: {event.model_dump_json()}\n\n".encode()


def usage_of(u: Usage) -> ResponseUsage:
    """pi's figures as the API counts them: input includes what the cache read and wrote."""
    total_input = u.input + u.cache_read + u.cache_write
    return ResponseUsage(
        input_tokens=total_input,
        input_tokens_details=InputTokensDetails(cached_tokens=u.cache_read, cache_write_tokens=u.cache_write),
        output_tokens=u.output,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        total_tokens=total_input + u.output,
    )


def encrypted(text: str) -> str:
    """A stand-in for the API's encrypted blobs: opaque, deterministic, carrying `text`."""
    return "enc:" + hashlib.sha256(text.encode()).hexdigest()[:16] + ":" + text


class ResponsesWire:
    def __init__(self, model: str) -> None:
        self.model = model
        self.sequence = 0
        self.output: list[ResponseOutputItem] = []

    def _next(self) -> int:
        self.sequence += 1
        return self.sequence - 1

    def _response(
        self, status: str, usage: ResponseUsage | None = None, incomplete: bool = False
    ) -> Response:
        return Response(
            id="resp_scripted",
            created_at=0,
            model=self.model,
            object="response",
            output=list(self.output),
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            status=status,  # pyright: ignore[reportArgumentType]
            usage=usage,
            incomplete_details=IncompleteDetails(reason="max_output_tokens") if incomplete else None,
        )

    def start(self, reply: Reply) -> list[bytes]:
        created = ResponseCreatedEvent(
            response=self._response("in_progress"), sequence_number=self._next(), type="response.created"
        )
        progress = ResponseInProgressEvent(
            response=self._response("in_progress"), sequence_number=self._next(), type="response.in_progress"
        )
        return [sse(created), sse(progress)]

    def _added(self, item: ResponseOutputItem) -> bytes:
        event = ResponseOutputItemAddedEvent(
            item=item,
            output_index=len(self.output),
            sequence_number=self._next(),
            type="response.output_item.added",
        )
        return sse(event)

    def _done(self, item: ResponseOutputItem) -> bytes:
        event = ResponseOutputItemDoneEvent(
            item=item,
            output_index=len(self.output),
            sequence_number=self._next(),
            type="response.output_item.done",
        )
        self.output.append(item)
        return sse(event)

    def step(self, step: Step) -> list[bytes]:
        if isinstance(step, Text):
            return self._text(step)
        if isinstance(step, Thinking):
            return self._reasoning(step)
        if isinstance(step, ToolCallStep):
            return self._call(step)
        return []

    def _text(self, step: Text) -> list[bytes]:
        item_id, index = f"msg_{len(self.output)}", len(self.output)
        out = [
            self._added(
                ResponseOutputMessage(
                    id=item_id, content=[], role="assistant", status="in_progress", type="message"
                )
            )
        ]
        empty = ResponseOutputText(annotations=[], text="", type="output_text")
        out.append(
            sse(
                ResponseContentPartAddedEvent(
                    content_index=0, item_id=item_id, output_index=index, part=empty,
                    sequence_number=self._next(), type="response.content_part.added",
                )
            )
        )  # fmt: skip
        for piece in _split(step.text, step.chunks):
            delta = ResponseTextDeltaEvent(
                content_index=0, delta=piece, item_id=item_id, logprobs=[], output_index=index,
                sequence_number=self._next(), type="response.output_text.delta",
            )  # fmt: skip
            out.append(sse(delta))
        full = ResponseOutputText(annotations=[], text=step.text, type="output_text")
        out.append(
            sse(
                ResponseTextDoneEvent(
                    content_index=0, item_id=item_id, logprobs=[], output_index=index, text=step.text,
                    sequence_number=self._next(), type="response.output_text.done",
                )
            )
        )  # fmt: skip
        out.append(
            sse(
                ResponseContentPartDoneEvent(
                    content_index=0, item_id=item_id, output_index=index, part=full,
                    sequence_number=self._next(), type="response.content_part.done",
                )
            )
        )  # fmt: skip
        out.append(
            self._done(
                ResponseOutputMessage(
                    id=item_id, content=[full], role="assistant", status="completed", type="message"
                )
            )
        )
        return out

    def _reasoning(self, step: Thinking) -> list[bytes]:
        """A reasoning item with one summary part; `signature` becomes its encrypted content."""
        item_id, index = f"rs_{len(self.output)}", len(self.output)
        out = [self._added(ResponseReasoningItem(id=item_id, summary=[], type="reasoning"))]
        out.append(
            sse(
                ResponseReasoningSummaryPartAddedEvent(
                    item_id=item_id, output_index=index, part=AddedPart(text="", type="summary_text"),
                    sequence_number=self._next(), summary_index=0, type="response.reasoning_summary_part.added",
                )
            )
        )  # fmt: skip
        for piece in _split(step.text, step.chunks):
            delta = ResponseReasoningSummaryTextDeltaEvent(
                delta=piece, item_id=item_id, output_index=index, sequence_number=self._next(),
                summary_index=0, type="response.reasoning_summary_text.delta",
            )  # fmt: skip
            out.append(sse(delta))
        out.append(
            sse(
                ResponseReasoningSummaryTextDoneEvent(
                    item_id=item_id, output_index=index, sequence_number=self._next(), summary_index=0,
                    text=step.text, type="response.reasoning_summary_text.done",
                )
            )
        )  # fmt: skip
        out.append(
            sse(
                ResponseReasoningSummaryPartDoneEvent(
                    item_id=item_id, output_index=index, part=DonePart(text=step.text, type="summary_text"),
                    sequence_number=self._next(), summary_index=0, type="response.reasoning_summary_part.done",
                )
            )
        )  # fmt: skip
        done = ResponseReasoningItem(
            id=item_id,
            summary=[Summary(text=step.text, type="summary_text")],
            type="reasoning",
            encrypted_content=encrypted(step.signature),
            status="completed",
        )
        out.append(self._done(done))
        return out

    def _call(self, step: ToolCallStep) -> list[bytes]:
        item_id, index = f"fc_{len(self.output)}", len(self.output)
        start = ResponseFunctionToolCall(
            id=item_id,
            arguments="",
            call_id=step.id,
            name=step.name,
            type="function_call",
            status="in_progress",
        )
        out = [self._added(start)]
        raw = step.wire_arguments()
        for piece in _split(raw, step.chunks):
            delta = ResponseFunctionCallArgumentsDeltaEvent(
                delta=piece, item_id=item_id, output_index=index, sequence_number=self._next(),
                type="response.function_call_arguments.delta",
            )  # fmt: skip
            out.append(sse(delta))
        out.append(
            sse(
                ResponseFunctionCallArgumentsDoneEvent(
                    arguments=raw, item_id=item_id, output_index=index, sequence_number=self._next(),
                    type="response.function_call_arguments.done",
                )
            )
        )  # fmt: skip
        out.append(self._done(start.model_copy(update={"arguments": raw, "status": "completed"})))
        return out

    def finish(self, reply: Reply) -> list[bytes]:
        usage = None if any(isinstance(s, NoUsage) for s in reply.steps) else usage_of(reply.usage)
        if reply.stop_reason in ("length", "max_tokens"):
            event: BaseModel = ResponseIncompleteEvent(
                response=self._response("incomplete", usage, incomplete=True),
                sequence_number=self._next(),
                type="response.incomplete",
            )
        else:
            event = ResponseCompletedEvent(
                response=self._response("completed", usage),
                sequence_number=self._next(),
                type="response.completed",
            )
        return [sse(event)]

    error_body = staticmethod(OpenAIWire.error_body)  # the same error shape as chat completions

    def compacted(self, step: Compacted, usage: Usage) -> dict[str, Any]:
        """The compact endpoint's answer: one encrypted compaction item (`CompactedResponse`)."""
        item = ResponseCompactionItem(
            id="cmp_scripted", encrypted_content=encrypted(step.summary), type="compaction"
        )
        answer = CompactedResponse(
            id="resp_compacted",
            created_at=0,
            object="response.compaction",
            output=[item],
            usage=usage_of(usage),
        )
        return json.loads(answer.model_dump_json())

    @staticmethod
    def refusal(body: dict[str, Any]) -> str | None:
        """What the API would refuse: an encrypted item (compaction, reasoning) it did not issue."""
        for item in body.get("input") or []:
            if not isinstance(item, dict) or item.get("type") not in ("compaction", "reasoning"):
                continue
            blob = item.get("encrypted_content")
            checked = item.get("type") == "compaction" or blob is not None
            if checked and (not isinstance(blob, str) or not issued(blob)):
                return (
                    f"invalid_encrypted_content: the {item.get('type')} item's encrypted content is not ours"
                )
        return None


def issued(blob: str) -> bool:
    _, digest, text = (blob.split(":", 2) + ["", ""])[:3]
    return blob.startswith("enc:") and encrypted(text) == blob and bool(digest)
