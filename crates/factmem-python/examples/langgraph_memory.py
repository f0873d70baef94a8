"""A memory node around an agent's turn, in the shape LangGraph gives it.

Each node is a function from the graph's state (a dict) to the keys it updates, so the
same functions go into ``langgraph.graph.StateGraph`` unchanged::

    graph = StateGraph(State)
    graph.add_node("recall", memory_nodes.recall)
    graph.add_node("agent", agent)
    graph.add_node("archive", memory_nodes.archive)
    graph.add_edge(START, "recall"); graph.add_edge("recall", "agent")
    graph.add_edge("agent", "archive"); graph.add_edge("archive", END)

``recall`` runs before the turn: it puts what memory knows about the user's message into
the state (``memory``), within a token budget, for the agent's prompt. ``archive`` runs
after it: the turn's messages are archived, and the extraction model (any ``str -> str``
callable) turns them into facts, superseding what they change.

Run it: ``python langgraph_memory.py`` (scripted models, no API key, no LangGraph needed:
``run_graph`` below runs the nodes in order, as the compiled graph would).
"""

import json
from typing import Any, Callable, Dict, List, Sequence

import factmem

State = Dict[str, Any]
Node = Callable[[State], State]


class MemoryNodes:
    """The two memory nodes over one :class:`factmem.Memory`."""

    def __init__(self, memory: factmem.Memory, max_tokens: int = 400) -> None:
        self.memory = memory
        self.max_tokens = max_tokens

    def recall(self, state: State) -> State:
        """Before the turn: what memory holds about the user's message."""
        question = state["messages"][-1]["content"]
        return {"memory": self.memory.recall(question, max_tokens=self.max_tokens).text}

    def archive(self, state: State) -> State:
        """After the turn: the turn archived, its facts extracted."""
        turn = state["messages"][-2:]
        result = self.memory.add(turn)
        return {"remembered": [fact.memory for fact in result.added]}


def run_graph(nodes: Sequence[Node], state: State) -> State:
    """Runs ``nodes`` in order, merging each one's update into the state."""
    for node in nodes:
        state = {**state, **node(state)}
    return state


def scripted_extractor(replies: List[Dict[str, Any]]) -> Callable[[str], str]:
    """An extraction model that answers each prompt with the next reply."""
    queue = [json.dumps(reply) for reply in replies]
    return lambda prompt: queue.pop(0) if queue else '{"facts": []}'


def scripted_agent(state: State) -> State:
    """The agent's turn: answers from the memory block in its prompt."""
    question = state["messages"][-1]["content"]
    if "Lisbon" in state["memory"] and "where" in question.lower():
        answer = "You live in Lisbon, as you told me."
    else:
        answer = "Noted!"
    return {"messages": state["messages"] + [{"role": "assistant", "content": answer}]}


def main() -> List[State]:
    extractor = scripted_extractor([
        {"facts": [{"subject": "user", "predicate": "lives_in", "object": "Lisbon",
                    "content": "User lives in Lisbon", "category": "context",
                    "confidence": 0.9, "turn": 0}]},
        {"facts": []},
    ])  # fmt: skip
    turns = ["I just moved to Lisbon!", "Where do I live these days?"]
    states = []
    with factmem.Memory(llm=extractor) as memory:
        nodes = MemoryNodes(memory)
        for text in turns:
            state = {"messages": [{"role": "user", "content": text}]}
            state = run_graph([nodes.recall, scripted_agent, nodes.archive], state)
            states.append(state)
            print(f"user: {text}\nagent: {state['messages'][-1]['content']}")
    return states


if __name__ == "__main__":
    main()
