# The data image for users with registry access: python:3.14-slim with
# numpy, pandas, matplotlib, scipy, Pillow, requests and httpx from PyPI (binary wheels; no
# compiler needed). The bridge delivers its runtime over stdin, so nothing
# else goes in. Build and choose it:
#
#   docker build -t sandbox-python-data:3.14 - <scripts/data-image.Dockerfile
#   MCP_BRIDGE_IMAGE=sandbox-python-data:3.14 mcp-server-code-execution-mode run
#
# (podman build takes the same arguments; the image must be in the engine the
# bridge uses.) Without a registry, scripts/provision builds the equivalent
# localhost/sandbox-python-data:3.11-r2 from Debian's packages instead.
FROM python:3.14-slim

RUN pip install --no-cache-dir numpy pandas matplotlib scipy pillow requests httpx

# A sandbox has no display: pyplot draws to files and buffers.
ENV MPLBACKEND=Agg

CMD ["python3"]
