"""A LangGraph agent persisted on agentstate: a StateGraph with a tool node and a human approval
(``interrupt``), compiled with ``AgentStateSaver``; run, resumed, then time-travelled (the history
of checkpoints, and a fork made with ``update_state``).

The "model" is scripted (it calls the weather tool for the city in the last question, then
answers with the tool's result), so the example runs without network or keys:

    AGENTSTATE_URL=http://127.0.0.1:8000 AGENTSTATE_API_KEY=<key> python examples/langgraph_graph.py
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from agentstate.integrations.langgraph import AgentStateSaver


@tool
def lookup_weather(city: str) -> str:
    """The weather in a city."""
    return {"Paris": "sunny, 21 C", "Rome": "cloudy, 18 C"}.get(city, "unknown")


def agent(state: MessagesState) -> dict[str, Any]:
    """A scripted model: a question becomes a tool call, a tool result becomes the answer."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"The weather: {last.content}.")]}
    city = str(last.content).rstrip("?").split()[-1]
    return {
        "messages": [
            AIMessage(content="", tool_calls=[{"name": "lookup_weather", "args": {"city": city}, "id": f"call-{city}"}])
        ]
    }


def review(state: MessagesState) -> Command:
    """A human approves each tool call; the graph stops here until resumed."""
    approved = interrupt({"question": "Run this tool call?", "tool_calls": state["messages"][-1].tool_calls})
    if approved:
        return Command(goto="tools")
    return Command(goto=END, update={"messages": [AIMessage(content="The tool call was not approved.")]})


def route(state: MessagesState) -> str:
    return "review" if state["messages"][-1].tool_calls else END


def build(checkpointer: AgentStateSaver):
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("review", review)
    builder.add_node("tools", ToolNode([lookup_weather]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["review", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def main(base_url: str, api_key: str, *, thread_id: str = "weather-demo", **saver_options: Any) -> dict[str, Any]:
    with AgentStateSaver(base_url, api_key, default_user_id="demo-user", **saver_options) as saver:
        graph = build(saver)
        config = {"configurable": {"thread_id": thread_id, "user_id": "alice"}}

        # 1. Run: the agent asks for a tool call and the graph stops for approval.
        paused = graph.invoke({"messages": [HumanMessage(content="What is the weather in Paris?")]}, config)
        question = paused["__interrupt__"][0].value

        # 2. Resume (a new process could do this: the state lives on the server).
        answer = graph.invoke(Command(resume=True), config)["messages"][-1].content

        # 3. Time travel: the history, newest first; fork at the checkpoint before the agent first
        #    ran, with a different question, and run the fork to its own answer.
        history = list(graph.get_state_history(config))
        before_agent = next(s for s in reversed(history) if s.next == ("agent",))
        fork = graph.update_state(
            before_agent.config,
            {
                "messages": [
                    HumanMessage(content="What is the weather in Rome?", id=before_agent.values["messages"][0].id)
                ]
            },
        )
        graph.invoke(None, fork)  # runs the fork up to its own approval
        fork_answer = graph.invoke(Command(resume=True), config)["messages"][
            -1
        ].content  # the thread's head is the fork

        return {
            "question": question,
            "answer": answer,
            "history_steps": [s.metadata["step"] for s in history],
            "fork_answer": fork_answer,
            "latest_answer": graph.get_state(config).values["messages"][-1].content,
        }


if __name__ == "__main__":
    for name, value in main(
        os.environ.get("AGENTSTATE_URL", "http://127.0.0.1:8000"), os.environ["AGENTSTATE_API_KEY"]
    ).items():
        print(f"{name}: {value}")
