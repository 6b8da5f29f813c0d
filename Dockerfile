FROM python:3.11-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
COPY requirements.txt requirements-dev.txt ./
RUN python -m venv .venv && .venv/bin/pip install --no-cache-dir -r requirements.txt && touch .venv/.installed
COPY . .
EXPOSE 8000
CMD ["make", "web"]
