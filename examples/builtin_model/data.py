"""Seeded synthetic chat data for the built-in model.

Every example is one assistant turn to learn: the conversation before it (system prompt,
offered tools, user and tool messages, earlier assistant turns), a thinking switch, and the
assistant message the model must produce. The chat template in ``template.py`` renders the
conversation into the prompt prefix and the assistant message into the completion text, so
training and inference see exactly the same text.

Two splits draw from disjoint entity lists (cities, search topics, currencies pairs and
number ranges) and partly disjoint phrasings: ``"train"`` for training and ``"eval"`` for the
held-out evaluation prompts.
"""

from __future__ import annotations

import json
import random

# ---------------------------------------------------------------------------------------------
# Tools (JSON schemas in the apply_chat_template format)
# ---------------------------------------------------------------------------------------------

UNITS = ["km", "mi", "m", "ft", "kg", "lb", "celsius", "fahrenheit", "l", "gal"]


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOLS: dict[str, dict] = {
    "get_weather": _tool(
        "get_weather",
        "Get the current weather in a city.",
        {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        ["city"],
    ),
    "get_time": _tool(
        "get_time",
        "Get the current local time in a city.",
        {"city": {"type": "string"}},
        ["city"],
    ),
    "convert_units": _tool(
        "convert_units",
        "Convert a value from one unit to another.",
        {
            "value": {"type": "number"},
            "from_unit": {"type": "string", "enum": UNITS},
            "to_unit": {"type": "string", "enum": UNITS},
        },
        ["value", "from_unit", "to_unit"],
    ),
    "calculate": _tool(
        "calculate",
        "Evaluate an arithmetic expression.",
        {"expression": {"type": "string"}},
        ["expression"],
    ),
    "web_search": _tool(
        "web_search",
        "Search the web and return the top results.",
        {
            "query": {"type": "string"},
            "max_results": {"type": "integer"},
        },
        ["query"],
    ),
    "get_exchange_rate": _tool(
        "get_exchange_rate",
        "Get the exchange rate between two currencies.",
        {
            "base": {"type": "string"},
            "target": {"type": "string"},
        },
        ["base", "target"],
    ),
}

# ---------------------------------------------------------------------------------------------
# Entities, split between training and evaluation
# ---------------------------------------------------------------------------------------------

_CITIES_TRAIN = """Paris London Tokyo Berlin Madrid Rome Lisbon Dublin Vienna Prague Warsaw Oslo
Stockholm Helsinki Copenhagen Amsterdam Brussels Zurich Geneva Athens Istanbul Cairo Nairobi Lagos
Accra Casablanca Tunis Dubai Doha Riyadh Tehran Karachi Delhi Mumbai Chennai Kolkata Dhaka Bangkok
Hanoi Manila Jakarta Singapore Seoul Beijing Shanghai Taipei Osaka Sydney Melbourne Perth Auckland
Toronto Montreal Vancouver Chicago Boston Seattle Denver Houston Dallas Miami Atlanta Phoenix Lima
Bogota Quito Santiago Caracas Havana Montevideo Asuncion Kyiv Minsk Riga Vilnius Tallinn Sofia
Bucharest Belgrade Zagreb Ljubljana Budapest Bratislava Krakow Munich Hamburg Frankfurt Cologne
Lyon Marseille Nice Porto Seville Valencia Bilbao Naples Milan Turin Florence Venice Edinburgh
Glasgow Cardiff Belfast Manchester Liverpool Leeds Bristol Kyoto Nagoya Sapporo Busan Hanoi
Kathmandu Colombo Tashkent Almaty Baku Tbilisi Yerevan Beirut Amman Muscat Khartoum Addis_Ababa
Kampala Kigali Lusaka Harare Maputo Luanda Dakar Bamako Abuja Windhoek Gaborone Durban Johannesburg
Cape_Town Buenos_Aires Sao_Paulo Rio_de_Janeiro Mexico_City Los_Angeles San_Francisco New_York
Las_Vegas San_Diego Hong_Kong Kuala_Lumpur Ho_Chi_Minh_City Tel_Aviv Abu_Dhabi New_Delhi
Salt_Lake_City Kansas_City Panama_City Guatemala_City""".split()

_CITIES_EVAL = """Reykjavik Marrakesh Ulaanbaatar Bratsk Tromso Valparaiso Cusco Medellin Cordoba
Rosario Antwerp Ghent Utrecht Rotterdam Bergen Aarhus Malmo Gdansk Poznan Brno Graz Salzburg
Innsbruck Basel Lausanne Bordeaux Toulouse Nantes Grenoble Granada Malaga Palermo Bologna Genoa
Thessaloniki Izmir Ankara Alexandria Luxor Mombasa Arusha Zanzibar Kumasi Ibadan Timbuktu Nouakchott
Fez Oran Sfax Jeddah Mecca Shiraz Isfahan Lahore Jaipur Pune Goa Hyderabad Chittagong Chiang_Mai
Da_Nang Cebu Surabaya Bandung Penang Incheon Chengdu Wuhan Xian Kaohsiung Fukuoka Hiroshima Brisbane
Adelaide Hobart Wellington Christchurch Calgary Ottawa Winnipeg Halifax Portland Austin Nashville
Detroit Pittsburgh Baltimore Orlando Tampa Anchorage Honolulu Boise Tucson Albuquerque Oaxaca
Guadalajara Monterrey Cancun Recife Salvador Manaus Fortaleza La_Paz Sucre Arequipa Cartagena
Port_of_Spain Kingston Nassau San_Juan Santo_Domingo St_Petersburg Novosibirsk Kazan Odesa Lviv
Plovdiv Varna Cluj Timisoara Split Dubrovnik Sarajevo Skopje Tirana Podgorica Nicosia Valletta
Ushuaia Iquitos Timbuktu Lhasa Samarkand Bukhara""".split()

_EVAL_CITY_NAMES = {c.replace("_", " ").lower() for c in _CITIES_EVAL}

_TOPICS_TRAIN = [
    "the history of the printing press", "how vaccines work", "the tallest mountain in Africa",
    "best pasta recipes", "python list comprehensions", "solar panel efficiency",
    "the rules of cricket", "how to grow tomatoes", "the life of Marie Curie", "black holes",
    "electric cars range", "the French revolution", "how bees make honey", "learning to play guitar",
    "the speed of light", "cheap flights to Europe", "machine learning basics", "the Roman empire",
    "healthy breakfast ideas", "how to tie a tie", "the Great Wall of China", "jazz history",
    "how rainbows form", "running a marathon", "the moon landing", "coffee brewing methods",
    "volcano eruptions", "the Olympic games", "how to meditate", "quantum computing news",
    "origami for beginners", "the water cycle", "famous paintings", "how tides work",
    "chess openings", "sourdough bread", "the human heart", "ancient Egypt", "climate change facts",
    "how to learn Spanish", "the periodic table", "renewable energy", "bird migration",
    "home workout plans", "the Amazon rainforest", "how airplanes fly", "knitting patterns",
    "the Beatles albums", "dinosaur fossils", "how to save money", "space telescope images",
    "the best hiking trails", "how batteries work", "the Nile river", "starting a vegetable garden",
    "photography tips", "the history of tea", "how to write a resume", "deep sea creatures",
    "electric guitars", "the Silk Road", "how compilers work", "vegan dessert recipes",
]

_TOPICS_EVAL = [
    "the invention of the telephone", "how glaciers move", "the rules of rugby", "baking croissants",
    "the life of Ada Lovelace", "coral reef bleaching", "how to train a puppy", "the Ottoman empire",
    "wind turbine design", "how submarines dive", "the history of chocolate", "learning the piano",
    "northern lights forecast", "rust programming tutorials", "the Mayan calendar", "how fungi grow",
    "budget travel in Asia", "the first computers", "how earthquakes happen", "yoga for beginners",
    "the Renaissance artists", "how to brew kombucha", "Saturn's rings", "the Vikings",
    "urban beekeeping", "how noise cancelling works", "the Sahara desert", "sleep hygiene tips",
    "medieval castles", "how to make sushi",
]

_CURRENCIES_TRAIN = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK", "NOK"]
_CURRENCIES_EVAL = ["BRL", "MXN", "ZAR", "KRW", "SGD", "NZD", "PLN", "TRY", "DKK", "HKD"]

# unit name variants as users write them -> canonical enum value
_UNIT_NAMES = {
    "km": ["km", "kilometers", "kilometres"],
    "mi": ["miles", "mi"],
    "m": ["meters", "metres", "m"],
    "ft": ["feet", "ft"],
    "kg": ["kg", "kilograms", "kilos"],
    "lb": ["pounds", "lb", "lbs"],
    "celsius": ["celsius", "degrees celsius", "C"],
    "fahrenheit": ["fahrenheit", "degrees fahrenheit", "F"],
    "l": ["liters", "litres", "l"],
    "gal": ["gallons", "gal"],
}
_UNIT_PAIRS = [("km", "mi"), ("mi", "km"), ("m", "ft"), ("ft", "m"), ("kg", "lb"), ("lb", "kg"),
               ("celsius", "fahrenheit"), ("fahrenheit", "celsius"), ("l", "gal"), ("gal", "l")]
_UNIT_FACTORS = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344, ("m", "ft"): 3.28084,
                 ("ft", "m"): 0.3048, ("kg", "lb"): 2.204623, ("lb", "kg"): 0.453592,
                 ("l", "gal"): 0.264172, ("gal", "l"): 3.785412}

_CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear", "partly cloudy",
               "stormy", "overcast"]

# ---------------------------------------------------------------------------------------------
# Phrasings: the last entries of each list are held out for evaluation
# ---------------------------------------------------------------------------------------------

_P_WEATHER = [
    "What's the weather in {city}?", "What is the weather like in {city} right now?",
    "How's the weather in {city}?", "Is it raining in {city}?", "weather {city}",
    "Tell me the current weather in {city}.", "Can you check the weather for {city}?",
    "What's the temperature in {city}?", "I'm going to {city} today, what's the weather?",
    "Do I need an umbrella in {city}?", "Give me the weather report for {city}, please.",
    "How hot is it in {city}?", "Check {city} weather",
    # held out
    "Any idea what the weather is doing in {city}?", "Could you look up the forecast for {city}?",
    "Is it cold in {city} at the moment?",
]
_P_WEATHER_UNIT = [
    "What's the weather in {city} in {unit}?", "Weather in {city} please, in {unit}.",
    "Tell me the temperature in {city} in degrees {unit}.", "How warm is {city}? Use {unit}.",
    # held out
    "Temperature in {city} ({unit}) please.",
]
_P_TIME = [
    "What time is it in {city}?", "What's the local time in {city}?", "Tell me the time in {city}.",
    "Current time in {city}?", "time in {city}", "Can you check what time it is in {city}?",
    "Is it morning or evening in {city} right now?", "What's the clock showing in {city}?",
    "I need the current time in {city}.",
    # held out
    "Do you know the hour in {city} now?", "What hour is it over in {city}?",
]
_P_CONVERT = [
    "Convert {value} {from} to {to}.", "How many {to} is {value} {from}?", "{value} {from} in {to}?",
    "What is {value} {from} in {to}?", "Please convert {value} {from} into {to}.",
    "Can you turn {value} {from} into {to}?", "I have {value} {from}. How much is that in {to}?",
    # held out
    "Express {value} {from} in {to}, please.", "{value} {from} equals how many {to}?",
]
_P_CALC = [
    "What is {expr}?", "Calculate {expr}.", "Compute {expr} for me.", "{expr} = ?",
    "Can you work out {expr}?", "Please evaluate {expr}.", "What do you get for {expr}?",
    "Solve {expr}",
    # held out
    "Quick math: {expr}", "Help me figure out {expr}.",
]
_P_SEARCH = [
    "Search the web for {topic}.", "Look up {topic}.", "Find information about {topic}.",
    "Can you search for {topic}?", "Google {topic} for me.", "I want to read about {topic}.",
    "Search: {topic}", "Find me some articles on {topic}.",
    # held out
    "Dig up some pages about {topic}.", "What can you find online about {topic}?",
]
_P_SEARCH_N = [
    "Search for {topic} and give me {n} results.", "Find {n} results about {topic}.",
    "Look up {topic}, top {n} results only.",
    # held out
    "I'd like {n} links on {topic}.",
]
_P_FX = [
    "What is the exchange rate from {base} to {target}?", "How much is 1 {base} in {target}?",
    "{base} to {target} rate?", "Convert currency: {base} to {target} exchange rate.",
    "Check the {base}/{target} exchange rate.", "What's the current {base} to {target} rate?",
    # held out
    "How many {target} do I get for one {base}?", "Rate between {base} and {target} today?",
]
_P_TWO_WEATHER = [
    "What's the weather in {city} and {city2}?", "Compare the weather in {city} and {city2}.",
    "Weather for {city} and {city2}, please.", "How is the weather in {city} and in {city2}?",
    "Check the weather in both {city} and {city2}.",
    # held out
    "I'm choosing between {city} and {city2}; what's the weather in each?",
]
_P_TWO_TIME = [
    "What time is it in {city} and {city2}?", "Tell me the local time in {city} and {city2}.",
    "Current time in {city} and in {city2}?",
    # held out
    "What are the clocks saying in {city} and {city2}?",
]
_P_WEATHER_TIME = [
    "What's the weather and the time in {city}?", "Tell me the time and weather in {city}.",
    "In {city}, what time is it and what's the weather?",
    # held out
    "I'm calling a friend in {city}: what time is it there and how's the weather?",
]
_P_TWO_CALC = [
    "Calculate {expr} and {expr2}.", "What are {expr} and {expr2}?",
    # held out
    "Work out both {expr} and {expr2}.",
]

# Training-only phrasings. They teach the words a request hinges on ("forecast", "hour",
# "online", "worth") in sentences of their own; the held-out sentences above stay unseen.
_EXTRA_TRAIN = {
    id(_P_WEATHER): ["What's the forecast for {city}?", "Forecast {city}", "Is it cold or warm in {city}?",
                     "Will it be sunny in {city} today?", "Is it snowing in {city}?",
                     "weather in {city} now", "How cold is it in {city}?"],
    id(_P_WEATHER_UNIT): ["Forecast for {city} in {unit}, please.", "{city} temperature in {unit}?"],
    id(_P_TIME): ["Tell me the hour in {city}.", "What's the time now in {city}?", "Clock in {city}?",
                  "Time check: {city}", "Is it late in {city} now?"],
    id(_P_CONVERT): ["Change {value} {from} into {to}.", "{value} {from} to {to}", "Turn {value} {from} into {to}, please."],
    id(_P_CALC): ["Figure out {expr}.", "math: {expr}", "Work out {expr}, please.", "{expr}"],
    id(_P_SEARCH): ["Find pages about {topic}.", "Browse online for {topic}.", "Search online: {topic}",
                    "Get me web results on {topic}."],
    id(_P_SEARCH_N): ["Give me {n} links about {topic}.", "{n} web results on {topic}, please."],
    id(_P_FX): ["What is one {base} worth in {target}?", "Exchange rate {base} {target}",
                "{base} in {target} today?"],
    id(_P_TWO_WEATHER): ["Weather in {city} and {city2}?", "Forecast for {city} and {city2}."],
    id(_P_TWO_TIME): ["Time in {city} and {city2}?", "Clocks in {city} and {city2}, please."],
    id(_P_WEATHER_TIME): ["Time and weather for {city}?"],
    id(_P_TWO_CALC): ["Compute {expr} and also {expr2}."],
}
_FILLER_BEFORE = ["Hey, ", "Hi! ", "Quick question: ", "Please, ", "Hello. ", "OK, ", "So, ", "Hmm, "]
_FILLER_AFTER = [" Thanks!", " Thank you.", " Please.", " Cheers.", " Quickly, please.", " :)"]

_HELD_OUT = {  # how many phrasings at the end of each list are evaluation-only
    id(_P_WEATHER): 3, id(_P_WEATHER_UNIT): 1, id(_P_TIME): 2, id(_P_CONVERT): 2, id(_P_CALC): 2,
    id(_P_SEARCH): 2, id(_P_SEARCH_N): 1, id(_P_FX): 2, id(_P_TWO_WEATHER): 1, id(_P_TWO_TIME): 1,
    id(_P_WEATHER_TIME): 1, id(_P_TWO_CALC): 1,
}

_PLAIN = [  # (user phrasings, answers) for requests that need no tool
    (["Hi!", "Hello", "Hey there", "Good morning!", "hello!", "Hi, who are you?",
      "Greetings", "Yo"],
     ["Hello! How can I help you today?", "Hi! What can I do for you?",
      "Hello! I can check the weather, the time, convert units, do math, look up exchange rates "
      "and search the web. What do you need?"]),
    (["Thanks!", "Thank you so much.", "thanks, that helps", "Great, thanks.", "Cheers!"],
     ["You're welcome!", "Happy to help!", "Anytime! Let me know if you need anything else."]),
    (["What can you do?", "What are you able to help with?", "Help", "What tools do you have?"],
     ["I can answer with the tools I am given: weather, local time, unit conversion, "
      "calculations, exchange rates and web search.",
      "I am a tiny assistant. Ask me about the weather, the time in a city, unit conversions, "
      "arithmetic, exchange rates or a web search."]),
    (["Tell me a joke.", "Say something funny.", "Make me laugh."],
     ["Why did the function return early? It had a prior engagement.",
      "I told my computer a joke about UDP. I am not sure it got it.",
      "Why do programmers prefer dark mode? Because light attracts bugs."]),
    (["How are you?", "How are you doing today?", "Are you ok?"],
     ["I'm doing well, thanks for asking! How can I help?", "All good here. What can I do for you?"]),
    (["Goodbye", "Bye!", "See you later."],
     ["Goodbye! Have a great day.", "See you! Come back any time."]),
    (["Who made you?", "Are you a real person?", "What model are you?"],
     ["I am a tiny demo model trained from scratch by the Response Template Playground project.",
      "I'm a small chat model built for the playground, not a person."]),
    (["Write a haiku.", "Write a short poem.", "Give me a haiku about rain."],
     ["Soft rain on the roof\ntokens falling one by one\nthe parser listens",
      "Quiet morning light\na kettle hums on the stove\nthe day opens slow"]),
    # held out
    (["Heya, anybody there?", "Morning! Who am I talking to?"],
     ["Hello! How can I help you today?"]),
]
_N_PLAIN_HELD_OUT = 1

_SYSTEMS = [None, "You are a helpful assistant.", "You are a concise assistant.",
            "You are a friendly assistant. Keep answers short.",
            "You are a helpful assistant with access to tools."]


def _phrases(lst: list, split: str, rng: random.Random) -> str:
    """Pick a phrasing: training uses the first part, evaluation mixes held-out and seen ones."""
    k = _HELD_OUT[id(lst)]
    if split == "train":
        text = rng.choice(lst[:-k] + _EXTRA_TRAIN[id(lst)])
        r = rng.random()
        if r < 0.12:
            filler = rng.choice(_FILLER_BEFORE)
            text = filler + (text[0].lower() + text[1:] if filler.endswith(", ") else text)
        elif r < 0.24:
            text = text + rng.choice(_FILLER_AFTER)
        return text
    if rng.random() < 0.5:
        return rng.choice(lst[-k:])
    return rng.choice(lst[:-k])


_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "br", "ch", "dr", "gr", "kr", "pl", "sh", "st", "tr", "th", "qu", "y", ""]
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ia", "y", "ea", "io"]
_CODAS = ["", "", "", "", "n", "r", "s", "l", "m", "k", "th", "rg", "nd", "sk", "x"]


def _random_word(rng: random.Random, syllables: int | None = None) -> str:
    """A pronounceable made-up word (``"vorkalen"``): an argument value no list can contain."""
    n = syllables or rng.choice([1, 2, 2, 2, 3, 3, 4])
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n))


def _random_city(rng: random.Random) -> str:
    """A made-up place name, sometimes of two or three words (``"Port Elvaro"``).

    Never one of the evaluation cities (``"Oran"`` could come out of the syllables), so that
    those stay unseen in training.
    """
    name = _random_word(rng).capitalize()
    while name.lower() in _EVAL_CITY_NAMES:
        name = _random_word(rng).capitalize()
    r = rng.random()
    if r < 0.12:
        return rng.choice(["San", "Port", "New", "Saint", "El", "Lake", "Fort", "Santa", "Nova"]) + " " + name
    if r < 0.2:
        return name + " " + rng.choice(["City", "Bay", "Falls", "Springs", "Heights", "Town"])
    if r < 0.27:
        return name + " " + _random_word(rng, 2).capitalize()
    return name


def _city(split: str, rng: random.Random) -> str:
    # Training mixes real names with made-up ones, so that the model learns to copy whatever
    # the user wrote instead of recalling a list; evaluation uses real names never trained on.
    if split == "train" and rng.random() < 0.6:
        return _random_city(rng)
    return rng.choice(_CITIES_TRAIN if split == "train" else _CITIES_EVAL).replace("_", " ")


def _number(split: str, rng: random.Random) -> int | float:
    if split == "train":
        v = rng.choice([rng.randint(1, 100), rng.randint(1, 1000), round(rng.uniform(0.5, 500), 1),
                        rng.randint(1, 9999), round(rng.uniform(0.01, 999), 2)])
    else:  # values not drawn in training often: larger ranges, two decimals
        v = rng.choice([rng.randint(101, 5000), round(rng.uniform(0.1, 999), 2), rng.randint(1, 100)])
    return v


def _fmt_num(v: int | float) -> str:
    return str(v)


def _expr(split: str, rng: random.Random) -> tuple[str, float | int]:
    hi = rng.choice([100, 999]) if split == "train" else 999
    a, b, c = rng.randint(1, hi), rng.randint(1, hi), rng.randint(1, 20)
    form = rng.randrange(6)
    if form == 0:
        e = f"{a} + {b}"
    elif form == 1:
        e = f"{a} - {b}"
    elif form == 2:
        e = f"{a} * {b}"
    elif form == 3:
        e = f"{a} / {c}"
    elif form == 4:
        e = f"({a} + {b}) * {c}"
    else:
        e = f"{a} * {c} - {b}"
    value = eval(e, {"__builtins__": {}})  # digits and operators only, built above
    if isinstance(value, float):
        value = round(value, 4)
        if value == int(value):
            value = int(value)
    return e, value


def _currency_pair(split: str, rng: random.Random) -> tuple[str, str]:
    pool = _CURRENCIES_TRAIN if split == "train" else _CURRENCIES_EVAL + _CURRENCIES_TRAIN[:3]
    base, target = rng.sample(pool, 2)
    if split == "train":  # made-up codes too: copy the code, do not recall it
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        def code() -> str:
            c = "".join(rng.choice(letters) for _ in range(3))
            return c if c not in _CURRENCIES_EVAL else code()

        if rng.random() < 0.5:
            base = code()
        if rng.random() < 0.5:
            target = code()
        if base == target:
            target = target[:2] + ("A" if target[2] != "A" else "B")
    return base, target


_TOPIC_FORMS = ["the history of {a}", "how {a} works", "{b} {a}", "the best {a}", "{a} for beginners",
                "{a} and {c}", "{b} {a} tips", "the rules of {a}", "{a} news", "how to make {a}",
                "the life of {p}", "{p}", "{a}", "learning {a}"]
_TOPIC_NOUNS = """kites pottery tennis lighthouses volcanoes robots rivers canals bridges trains bicycles
satellites telescopes pianos violins drums poetry novels comics cheese noodles dumplings soup bread
tea spices gardens forests deserts oceans islands caves maps coins stamps clocks engines rockets
drones cameras printers keyboards fonts databases networks passwords algorithms spreadsheets
penguins whales wolves owls horses cats dogs frogs butterflies ants mushrooms cactus roses""".split()
_TOPIC_ADJ = """cheap fast simple ancient modern famous small electric healthy quiet local free
classic rare strange easy""".split()


def _topic(split: str, rng: random.Random) -> str:
    """A search query: a listed topic, or (training only) a new one from words and made-up names."""
    if split != "train":
        return rng.choice(_TOPICS_EVAL)
    if rng.random() < 0.4:
        return rng.choice(_TOPICS_TRAIN)

    def noun() -> str:
        return rng.choice(_TOPIC_NOUNS) if rng.random() < 0.6 else _random_word(rng)

    person = _random_word(rng, 2).capitalize() + " " + _random_word(rng, rng.choice([2, 3])).capitalize()
    return rng.choice(_TOPIC_FORMS).format(a=noun(), b=rng.choice(_TOPIC_ADJ), c=noun(), p=person)


def _call(name: str, args: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": args}}


# ---------------------------------------------------------------------------------------------
# Tool results and the answers that use them
# ---------------------------------------------------------------------------------------------

def _result(call: dict, rng: random.Random) -> dict:
    """A plausible tool result for one call."""
    name, a = call["function"]["name"], call["function"]["arguments"]
    if name == "get_weather":
        unit = a.get("unit", "celsius")
        t = rng.randint(-10, 38)
        if unit == "fahrenheit":
            t = round(t * 9 / 5 + 32)
        return {"city": a["city"], "temperature": t, "unit": unit, "condition": rng.choice(_CONDITIONS)}
    if name == "get_time":
        h, m = rng.randint(0, 23), rng.randint(0, 59)
        return {"city": a["city"], "time": f"{h:02d}:{m:02d}"}
    if name == "convert_units":
        v, f, t = a["value"], a["from_unit"], a["to_unit"]
        if (f, t) == ("celsius", "fahrenheit"):
            r = v * 9 / 5 + 32
        elif (f, t) == ("fahrenheit", "celsius"):
            r = (v - 32) * 5 / 9
        else:
            r = v * _UNIT_FACTORS[(f, t)]
        return {"value": round(r, 2), "unit": t}
    if name == "calculate":
        return {"result": a["_value"]} if "_value" in a else {"result": 0}
    if name == "web_search":
        q = a["query"]
        n = min(a.get("max_results", 2), 3)
        return {"results": [{"title": f"{q.capitalize()} - {src}", "url": f"https://{src.lower()}.org/{i + 1}"}
                            for i, src in enumerate(rng.sample(["Wikipedia", "Britannica", "Guide", "News",
                                                                  "Blog", "Forum"], n))]}
    if name == "get_exchange_rate":
        return {"base": a["base"], "target": a["target"], "rate": round(rng.uniform(0.01, 150), 4)}
    raise ValueError(name)


def _answer_for(call: dict, res: dict, rng: random.Random) -> str:
    """One sentence that reports a tool result."""
    name, a = call["function"]["name"], call["function"]["arguments"]
    if name == "get_weather":
        sym = "°C" if res["unit"] == "celsius" else "°F"
        return rng.choice([
            f"It is currently {res['temperature']}{sym} and {res['condition']} in {res['city']}.",
            f"In {res['city']} it's {res['condition']} with a temperature of {res['temperature']}{sym}.",
            f"{res['city']}: {res['condition']}, {res['temperature']}{sym}.",
        ])
    if name == "get_time":
        return rng.choice([f"The local time in {res['city']} is {res['time']}.",
                           f"It is {res['time']} in {res['city']} right now.",
                           f"In {res['city']} it's {res['time']}."])
    if name == "convert_units":
        return rng.choice([f"{_fmt_num(a['value'])} {a['from_unit']} is {res['value']} {res['unit']}.",
                           f"That is {res['value']} {res['unit']}.",
                           f"{_fmt_num(a['value'])} {a['from_unit']} equals about {res['value']} {res['unit']}."])
    if name == "calculate":
        return rng.choice([f"{a['expression']} = {res['result']}.", f"The answer is {res['result']}.",
                           f"{a['expression']} equals {res['result']}."])
    if name == "web_search":
        lines = "\n".join(f"- {r['title']} ({r['url']})" for r in res["results"])
        return rng.choice([f"Here is what I found about {a['query']}:\n{lines}",
                           f"Top results for {a['query']}:\n{lines}"])
    if name == "get_exchange_rate":
        return rng.choice([f"1 {res['base']} is worth {res['rate']} {res['target']}.",
                           f"The {res['base']} to {res['target']} rate is {res['rate']}."])
    raise ValueError(name)


def _describe(call: dict) -> str:
    """How the reasoning names a planned call."""
    name, a = call["function"]["name"], call["function"]["arguments"]
    args = ", ".join(f"{k} {v}" for k, v in a.items() if not k.startswith("_"))
    return f"{name} with {args}"


# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------

def _request(split: str, rng: random.Random) -> tuple[str, list[dict]]:
    """A user message and the calls that answer it (one or two)."""
    kind = rng.choices(
        ["weather", "weather_unit", "time", "convert", "calc", "search", "search_n", "fx",
         "two_weather", "two_time", "weather_time", "two_calc"],
        weights=[12, 4, 9, 9, 9, 9, 3, 7, 6, 3, 4, 2])[0]
    if kind == "weather":
        c = _city(split, rng)
        return _phrases(_P_WEATHER, split, rng).format(city=c), [_call("get_weather", {"city": c})]
    if kind == "weather_unit":
        c, u = _city(split, rng), rng.choice(["celsius", "fahrenheit"])
        return (_phrases(_P_WEATHER_UNIT, split, rng).format(city=c, unit=u),
                [_call("get_weather", {"city": c, "unit": u})])
    if kind == "time":
        c = _city(split, rng)
        return _phrases(_P_TIME, split, rng).format(city=c), [_call("get_time", {"city": c})]
    if kind == "convert":
        f, t = rng.choice(_UNIT_PAIRS)
        v = _number(split, rng)
        text = _phrases(_P_CONVERT, split, rng).format(
            value=_fmt_num(v), **{"from": rng.choice(_UNIT_NAMES[f]), "to": rng.choice(_UNIT_NAMES[t])})
        return text, [_call("convert_units", {"value": v, "from_unit": f, "to_unit": t})]
    if kind == "calc":
        e, val = _expr(split, rng)
        return (_phrases(_P_CALC, split, rng).format(expr=e),
                [_call("calculate", {"expression": e, "_value": val})])
    if kind == "search":
        tp = _topic(split, rng)
        return _phrases(_P_SEARCH, split, rng).format(topic=tp), [_call("web_search", {"query": tp})]
    if kind == "search_n":
        tp = _topic(split, rng)
        n = rng.randint(1, 10)
        return (_phrases(_P_SEARCH_N, split, rng).format(topic=tp, n=n),
                [_call("web_search", {"query": tp, "max_results": n})])
    if kind == "fx":
        b, t = _currency_pair(split, rng)
        return (_phrases(_P_FX, split, rng).format(base=b, target=t),
                [_call("get_exchange_rate", {"base": b, "target": t})])
    if kind == "two_weather":
        c1 = _city(split, rng)
        c2 = _city(split, rng)
        while c2 == c1:
            c2 = _city(split, rng)
        return (_phrases(_P_TWO_WEATHER, split, rng).format(city=c1, city2=c2),
                [_call("get_weather", {"city": c1}), _call("get_weather", {"city": c2})])
    if kind == "two_time":
        c1 = _city(split, rng)
        c2 = _city(split, rng)
        while c2 == c1:
            c2 = _city(split, rng)
        return (_phrases(_P_TWO_TIME, split, rng).format(city=c1, city2=c2),
                [_call("get_time", {"city": c1}), _call("get_time", {"city": c2})])
    if kind == "weather_time":
        c = _city(split, rng)
        calls = [_call("get_weather", {"city": c}), _call("get_time", {"city": c})]
        text = _phrases(_P_WEATHER_TIME, split, rng).format(city=c)
        if text.lower().index("time") < text.lower().index("weather"):
            calls.reverse()
        return text, calls
    e1, v1 = _expr(split, rng)
    e2, v2 = _expr(split, rng)
    return (_phrases(_P_TWO_CALC, split, rng).format(expr=e1, expr2=e2),
            [_call("calculate", {"expression": e1, "_value": v1}),
             _call("calculate", {"expression": e2, "_value": v2})])


def _clean(call: dict) -> dict:
    """Drop the private ``_value`` helper from a call's arguments."""
    a = {k: v for k, v in call["function"]["arguments"].items() if not k.startswith("_")}
    return _call(call["function"]["name"], a)


def _offered_tools(needed: set[str], rng: random.Random, split: str = "eval") -> list[dict]:
    """The needed tools plus distractors, in random order.

    Evaluation offers 0-1 distractors; training offers 0-3, so that the model has to pick the
    tool the request names from the list it was given instead of the only one there.
    """
    others = [n for n in TOOLS if n not in needed]
    if split == "train":
        k = min(len(others), rng.choice([0, 1, 1, 2, 3])) if needed else rng.randint(1, 3)
    else:
        k = rng.choice([0, 0, 1]) if needed else rng.randint(1, 2)
    names = list(needed) + rng.sample(others, k)
    rng.shuffle(names)
    return [TOOLS[n] for n in names]


def _plain(split: str, rng: random.Random) -> tuple[str, str]:
    """A request that needs no tool, and its answer."""
    groups = _PLAIN[:-_N_PLAIN_HELD_OUT] if split == "train" else _PLAIN
    users, answers = rng.choice(groups)
    return rng.choice(users), rng.choice(answers)


def make_example(split: str, rng: random.Random) -> dict:
    """One training/evaluation example.

    Returns a dict with ``messages`` (the conversation before the assistant turn), ``tools``
    (offered tools or None), ``thinking`` (bool), ``kind`` (``"call"``, ``"answer"`` or
    ``"plain"``), ``target`` (the assistant message to produce) and, for ``"call"`` examples,
    ``expected_calls``.
    """
    thinking = rng.random() < 0.5
    system = rng.choice(_SYSTEMS)
    messages: list[dict] = [{"role": "system", "content": system}] if system else []
    # training leans on first turns (the calls), the harder part; evaluation keeps the old mix
    kind = rng.choices(["call", "answer", "plain"], weights=[6, 3, 2] if split == "train" else [5, 4, 2])[0]
    if kind == "plain":
        user, answer = _plain(split, rng)
        tools = _offered_tools(set(), rng, split) if rng.random() < 0.7 else None
        if tools == []:
            tools = None
        messages.append({"role": "user", "content": user})
        reasoning = rng.choice([
            "The user is just chatting. No tool is needed, I can answer directly.",
            f"The message is \"{user}\". This needs no tool call. I will reply briefly.",
            "Nothing to look up here, so I answer without tools.",
        ]) if thinking else None
        target = {"role": "assistant", "content": answer}
        if reasoning:
            target["reasoning_content"] = reasoning
        return {"messages": messages, "tools": tools, "thinking": thinking, "kind": kind, "target": target}

    user, calls = _request(split, rng)
    tools = _offered_tools({c["function"]["name"] for c in calls}, rng, split)
    messages.append({"role": "user", "content": user})
    clean = [_clean(c) for c in calls]
    if kind == "call":
        target = {"role": "assistant", "tool_calls": clean}
        if thinking:
            plan = " and ".join(_describe(c) for c in clean)
            target["reasoning_content"] = rng.choice([
                f"The user asks: {user} I should call {plan}.",
                f"I need a tool for this. I will call {plan}.",
                f"To answer I call {plan}.",
            ])
        return {"messages": messages, "tools": tools, "thinking": thinking, "kind": kind,
                "target": target, "expected_calls": clean}

    # "answer": the calls were made, results came back, now answer from them
    first = {"role": "assistant", "tool_calls": clean}
    if thinking and rng.random() < 0.5:  # reasoning of the earlier turn is kept in history
        first["reasoning_content"] = "I will call " + " and ".join(_describe(c) for c in clean) + "."
    messages.append(first)
    results = [_result(c, rng) for c in calls]
    for r in results:
        messages.append({"role": "tool", "content": json.dumps(r, ensure_ascii=False)})
    answer = " ".join(_answer_for(c, r, rng) if c["function"]["name"] != "web_search"
                      else _answer_for(c, r, rng) for c, r in zip(calls, results))
    if len(calls) == 2 and calls[0]["function"]["name"] == "web_search":
        answer = "\n\n".join(_answer_for(c, r, rng) for c, r in zip(calls, results))
    target = {"role": "assistant", "content": answer}
    if thinking:
        target["reasoning_content"] = rng.choice([
            "The tool results are in. I will summarize them for the user.",
            "I have the results now, so I can answer.",
            f"The tool returned {json.dumps(results[0], ensure_ascii=False)}. I report it.",
        ])
    return {"messages": messages, "tools": tools, "thinking": thinking, "kind": kind, "target": target}


def make_examples(n: int, split: str, seed: int) -> list[dict]:
    """``n`` examples of one split, reproducible from ``seed``."""
    rng = random.Random(f"{split}:{seed}")
    return [make_example(split, rng) for _ in range(n)]
