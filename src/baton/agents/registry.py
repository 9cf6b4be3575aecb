"""``AgentRegistry``: agents by name, instantiated lazily and configured exactly once.

A registry is an ordinary object you create (``AgentRegistry()``); nothing is registered by
importing a module. Registration takes a factory (a class or any callable returning a
``BaseAgent``); the first ``get_instance`` builds the agent and awaits its ``configure()``,
under a per-name lock so concurrent first uses share one instance and one configuration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import overload

from baton.agents.base import BaseAgent
from baton.errors import ConfigurationError

AgentFactory = Callable[[], BaseAgent]


class UnknownAgentError(ConfigurationError, ValueError):
    """Asked for an agent name nobody registered; the message lists the registered ones.
    Also a ``ValueError``, the type seed 000's registry raises for an unknown name, so code
    written against the seed catches it."""


class AgentRegistry:
    def __init__(self) -> None:
        self._factories: dict[str, AgentFactory] = {}
        self._descriptions: dict[str, str] = {}
        self._instances: dict[str, BaseAgent] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @overload
    def register(self, name: str, factory: AgentFactory, *, description: str | None = None, replace: bool = False) -> AgentFactory: ...
    @overload
    def register(self, name: str, factory: None = None, *, description: str | None = None, replace: bool = False) -> Callable[[AgentFactory], AgentFactory]: ...

    def register(self, name: str, factory: AgentFactory | None = None, *, description: str | None = None,
                 replace: bool = False) -> AgentFactory | Callable[[AgentFactory], AgentFactory]:
        """Register ``factory`` under ``name``; without a factory, works as a decorator."""

        def add(fn: AgentFactory) -> AgentFactory:
            if name in self._factories and not replace:
                raise ConfigurationError(f"an agent named {name!r} is already registered (pass replace=True)")
            self._factories[name] = fn
            self._instances.pop(name, None)
            if description:
                self._descriptions[name] = description
            return fn

        return add(factory) if factory is not None else add

    def register_instance(self, agent: BaseAgent, *, name: str | None = None) -> BaseAgent:
        """Register an already built (and configured by you) agent."""
        key = name or agent.name
        self._factories[key] = lambda: agent
        self._instances[key] = agent
        return agent

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def describe(self, name: str) -> str:
        return self._descriptions.get(name, "")

    async def get_instance(self, name: str) -> BaseAgent:
        """The agent registered as ``name``, built and configured on first use."""
        instance = self._instances.get(name)
        if instance is not None:
            return instance
        if name not in self._factories:
            registered = ", ".join(self.names()) or "none"
            raise UnknownAgentError(f"no agent named {name!r} is registered (registered: {registered})")
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            instance = self._instances.get(name)
            if instance is None:
                instance = self._factories[name]()
                if not isinstance(instance, BaseAgent):
                    raise ConfigurationError(f"factory for {name!r} returned {type(instance).__name__}, not a BaseAgent")
                await instance.configure()
                self._instances[name] = instance
        return instance
